// rt-fuse-add-layernorm: the residual add and the layernorm that reads its
// result become one add_layernorm_fwd kernel; in the backward, the
// layernorm backward and the add of its dx into the residual stream's
// gradient become one layernorm_bwd_add (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_RTFUSEADDLAYERNORM
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// The operands an FP8 epilogue adds to `base` (gptrt.h): none for `base`
// itself, 3 constants for base_amax, the scale and 6 constants for
// base_cast; nullopt for any other kernel.
struct EpilogueShape {
  size_t extraIns, extraConsts;
};
std::optional<EpilogueShape> epilogueShape(StringRef kernel, StringRef base) {
  if (kernel == base)
    return EpilogueShape{0, 0};
  if (kernel == (base + "_amax").str())
    return EpilogueShape{0, 3};
  if (kernel == (base + "_cast").str())
    return EpilogueShape{1, 6};
  return std::nullopt;
}

class RtFuseAddLayerNormPass
    : public gptc::impl::RtFuseAddLayerNormBase<RtFuseAddLayerNormPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> adds, backwards;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "add")
        adds.push_back(op);
      else if (op.getKernel() == "layernorm_bwd")
        backwards.push_back(op);
    });
    for (rt::KernelOp norm : backwards)
      fuseBackward(norm);
    for (rt::KernelOp add : adds)
      if (add->getBlock()) // (not consumed by a backward fusion)
        fuse(add);
  }

private:
  // add(a, b) -> x; layernorm_fwd(x, w, bias) -> out, mean, rstd (or its
  // _amax / _cast form), with x untouched in between: one
  // add_layernorm_fwd (_amax / _cast) where the layernorm was.
  void fuse(rt::KernelOp add) {
    // gptrt_add's constants: outer, inner, broadcast_b, a, b and out dtypes.
    if (add.getInputs().size() != 2 || add.getOutputs().size() != 1 ||
        add.getConsts().size() != 6 || rt::constAt(add, 2) != 0)
      return;
    Value x = add.getOutputs()[0];
    auto norm = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(add, x));
    if (!norm)
      return;
    // gptrt_layernorm_fwd's constants: rows, width, eps, x and out dtypes;
    // then the epilogue's (inputs x, w, bias (, scale); outputs out, mean,
    // rstd (, amax, q)).
    StringRef kernel = norm.getKernel();
    std::optional<EpilogueShape> shape = epilogueShape(kernel, "layernorm_fwd");
    if (!shape || norm.getInputs().size() != 3 + shape->extraIns ||
        norm.getInputs()[0] != x ||
        norm.getConsts().size() != 5 + shape->extraConsts)
      return;
    if (rt::constAt(norm, 0) * rt::constAt(norm, 1) !=
            rt::constAt(add, 0) * rt::constAt(add, 1) ||
        rt::constAt(norm, 3) != rt::constAt(add, 5))
      return;
    // The add now runs where the layernorm did: its operands must still
    // hold what they held.
    for (Value operand : add.getInputs())
      for (Operation *user : operand.getUsers())
        if (add->isBeforeInBlock(user) && user->isBeforeInBlock(norm) &&
            rt::writes(user, operand))
          return;
    SmallVector<Value> ins(add.getInputs().begin(), add.getInputs().end());
    ins.append(norm.getInputs().begin() + 1, norm.getInputs().end());
    SmallVector<Value> outs{x};
    outs.append(norm.getOutputs().begin(), norm.getOutputs().end());
    ArrayAttr n = norm.getConsts(), a = add.getConsts();
    SmallVector<Attribute> consts{n[0], n[1], n[2], a[3], a[4], a[5], n[4]};
    consts.append(n.begin() + 5, n.end());
    OpBuilder b(norm);
    auto fusedOp = rt::KernelOp::create(b, norm.getLoc(),
                                        ("add_" + kernel).str(), ins, outs,
                                        /*stream=*/0, b.getArrayAttr(consts));
    // The FP8 statistics' slot names (rt.fp8_stat) stay with the cast.
    fusedOp->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
    norm.erase();
    add.erase();
    ++fused;
  }

  // layernorm_bwd(dout, x, w, mean, rstd) -> dx, dw, db, and an add of dx
  // and the residual stream's gradient (plain, or with the _amax / _cast
  // epilogue of fp8-fuse-amax / fp8-fuse-cast), dx read by nothing else:
  // one layernorm_bwd_add(_amax / _cast) where the add was. dx is never
  // stored, and its buffer goes.
  void fuseBackward(rt::KernelOp norm) {
    // gptrt_layernorm_bwd's constants: rows, width, then the dtypes of dout,
    // x, dx, dw, db.
    if (norm.getInputs().size() != 5 || norm.getOutputs().size() != 3 ||
        norm.getConsts().size() != 7)
      return;
    const int64_t rows = rt::constAt(norm, 0), width = rt::constAt(norm, 1);
    Value dxRoot = rt::rootBuffer(norm.getOutputs()[0]);
    if (!dxRoot.getDefiningOp<rt::AllocOp>() ||
        cast<MemRefType>(dxRoot.getType()).getNumElements() != rows * width)
      return;
    // The one kernel other than the layernorm that uses dx.
    rt::KernelOp add;
    for (Value view : rt::viewsOf(dxRoot))
      for (Operation *user : view.getUsers()) {
        if (user == norm || isa<rt::ReshapeOp>(user))
          continue;
        auto kernel = dyn_cast<rt::KernelOp>(user);
        if (!kernel || (add && kernel != add))
          return;
        add = kernel;
      }
    // gptrt_add's constants: outer, inner, broadcast_b, a, b and sum dtypes,
    // then the epilogue's (inputs a, b (, scale); outputs sum (, amax, q)).
    if (!add)
      return;
    StringRef kernel = add.getKernel();
    std::optional<EpilogueShape> shape = epilogueShape(kernel, "add");
    if (!shape || add.getInputs().size() != 2 + shape->extraIns ||
        add.getConsts().size() != 6 + shape->extraConsts ||
        rt::constAt(add, 2) != 0 ||
        rt::constAt(add, 0) * rt::constAt(add, 1) != rows * width)
      return;
    const bool dxIsA = rt::rootBuffer(add.getInputs()[0]) == dxRoot;
    const bool dxIsB = rt::rootBuffer(add.getInputs()[1]) == dxRoot;
    if (dxIsA == dxIsB ||
        rt::constAt(add, dxIsA ? 3 : 4) != rt::constAt(norm, 4))
      return;
    Value resid = add.getInputs()[dxIsA ? 1 : 0];
    // The layernorm now runs where the add does: its inputs must still hold
    // what they held, its dw and db be left alone in between, and the add's
    // outputs not overlap what the fused kernel reads or also writes.
    for (Value in : norm.getInputs())
      if (rt::touchedBetween(norm, add, in, /*reads=*/false))
        return;
    for (Value out : norm.getOutputs().drop_front())
      if (rt::touchedBetween(norm, add, out, /*reads=*/true))
        return;
    for (Value out : add.getOutputs())
      for (Value other : llvm::concat<Value>(norm.getInputs(),
                                             norm.getOutputs().drop_front()))
        if (rt::mayAlias(out, other))
          return;
    SmallVector<Value> ins(norm.getInputs().begin(), norm.getInputs().end());
    ins.push_back(resid);
    ins.append(add.getInputs().begin() + 2, add.getInputs().end());
    SmallVector<Value> outs{add.getOutputs()[0]};
    outs.append(norm.getOutputs().begin() + 1, norm.getOutputs().end());
    outs.append(add.getOutputs().begin() + 1, add.getOutputs().end());
    SmallVector<Attribute> consts(norm.getConsts().begin(),
                                  norm.getConsts().end());
    consts.push_back(add.getConsts()[dxIsA ? 4 : 3]);
    consts.append(add.getConsts().begin() + 5, add.getConsts().end());
    OpBuilder b(add);
    auto fusedOp = rt::KernelOp::create(
        b, add.getLoc(), ("layernorm_bwd_" + kernel).str(), ins, outs,
        /*stream=*/0, b.getArrayAttr(consts));
    // The FP8 statistics' slot names (rt.fp8_stat) stay with the cast.
    fusedOp->setDiscardableAttrs(add->getDiscardableAttrDictionary());
    add.erase();
    norm.erase();
    eraseUnused(dxRoot);
    ++fusedBackward;
  }

  // Erases a buffer and its reshapes once nothing else uses them.
  static void eraseUnused(Value root) {
    SmallVector<Value> views = rt::viewsOf(root);
    for (Value view : llvm::reverse(views))
      if (view.use_empty())
        view.getDefiningOp()->erase();
  }
};

} // namespace
