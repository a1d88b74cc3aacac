// rt-fuse-add-layernorm: the residual add and the layernorm that reads its
// result become one add_layernorm_fwd kernel; in the backward, the
// layernorm backward and the add of its dx into the residual stream's
// gradient become one layernorm_bwd_add (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEADDLAYERNORM
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

class RtFuseAddLayerNormPass
    : public gptc::impl::RtFuseAddLayerNormBase<RtFuseAddLayerNormPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    consumed.clear();
    SmallVector<rt::KernelOp> adds, backwards;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "add")
        adds.push_back(op);
      else if (op.getKernel() == "layernorm_bwd")
        backwards.push_back(op);
    });
    for (rt::KernelOp norm : backwards)
      fuseBackward(norm);
    // An erased op cannot be asked whether it still exists: the backward
    // fusions record the adds they consumed.
    for (rt::KernelOp add : adds)
      if (!consumed.contains(add.getOperation()))
        fuse(add);
  }

  // Adds a backward fusion erased (AddressSanitizer found the old
  // `add->getBlock()` test reading freed memory).
  llvm::SmallPtrSet<Operation *, 16> consumed;

private:
  // add(a, b) -> x; layernorm_fwd(x, w, bias) -> out, mean, rstd (with
  // or without an output epilogue), with x untouched in between: one
  // add_layernorm_fwd, with the same epilogue, where the layernorm was.
  void fuse(rt::KernelOp add) {
    // An add with an epilogue of its own stays.
    if (add.getInputs().size() != 2 || add.getOutputs().size() != 1 ||
        rt::hasEpilogue(add) || rt::constNamed(add, "broadcast_b") != 0)
      return;
    Value x = add.getOutputs()[0];
    auto norm = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(add, x));
    if (!norm)
      return;
    // Buffers x, w, bias; out, mean, rstd (and the epilogue's). Its dual
    // cast (no out) is formed after this pass.
    if (norm.getKernel() != "layernorm_fwd" || norm.getInputs().size() < 3 ||
        norm.getInputs()[0] != x || norm.getOutputs().size() < 3 ||
        !rt::bufferNamed(norm, "out") ||
        norm.getConsts().size() < 5)
      return;
    if (rt::constNamed(norm, "rows") * rt::constNamed(norm, "width") !=
            rt::constNamed(add, "outer") * rt::constNamed(add, "inner") ||
        rt::constNamed(norm, "x_dtype") != rt::constNamed(add, "out_dtype"))
      return;
    // The add now runs where the layernorm did: its operands must still
    // hold what they held.
    for (Value operand : add.getInputs())
      for (Operation *user : operand.getUsers())
        if (add->isBeforeInBlock(user) && user->isBeforeInBlock(norm) &&
            rt::writes(user, operand))
          return;
    SmallVector<Value> ins(add.getInputs().begin(), add.getInputs().end());
    ins.append({norm.getInputs()[1], norm.getInputs()[2]});
    SmallVector<Value> outs{x};
    outs.append(norm.getOutputs().begin(), norm.getOutputs().begin() + 3);
    // add_layernorm_fwd's constants: the layernorm's rows, width, eps; the
    // add's a, b and out (x) dtypes; the layernorm's out dtype.
    auto fromNorm = [&](StringRef name) {
      return rt::constAttrNamed(norm, name);
    };
    auto fromAdd = [&](StringRef name) {
      return rt::constAttrNamed(add, name);
    };
    SmallVector<Attribute> consts{fromNorm("rows"),     fromNorm("width"),
                                  fromNorm("eps"),      fromAdd("a_dtype"),
                                  fromAdd("b_dtype"),   fromAdd("out_dtype"),
                                  fromNorm("out_dtype")};
    auto [buffers, fields] = rt::epilogueOf(norm);
    OpBuilder b(norm);
    rt::KernelOp fusedOp =
        rt::createWithEpilogue(b, norm.getLoc(), "add_layernorm_fwd", ins,
                               outs, consts, buffers, fields);
    // The FP8 statistics' slot names (rt.fp8_stat) stay with the cast.
    fusedOp->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
    norm.erase();
    add.erase();
    ++fused;
  }

  // layernorm_bwd(dout, x, w, mean, rstd) -> dx, dw, db, and an add of dx
  // and the residual stream's gradient (with or without the epilogue of
  // fp8-fuse-amax / fp8-fuse-cast), dx read by nothing else: one
  // layernorm_bwd_add, with the add's epilogue, where the add was. dx is
  // never stored, and its buffer goes.
  void fuseBackward(rt::KernelOp norm) {
    // A layernorm backward with an epilogue of its own stays.
    if (norm.getInputs().size() != 5 || norm.getOutputs().size() != 3 ||
        rt::hasEpilogue(norm))
      return;
    const int64_t rows = rt::constNamed(norm, "rows"),
                  width = rt::constNamed(norm, "width");
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
    // The add's buffers: a, b (, scale); sum (, amax, q); its epilogue, if
    // any, carries over.
    if (!add || add.getKernel() != "add" || add.getInputs().size() < 2 ||
        add.getConsts().size() < 6 || rt::constNamed(add, "broadcast_b") != 0 ||
        rt::constNamed(add, "outer") * rt::constNamed(add, "inner") !=
            rows * width)
      return;
    const bool dxIsA = rt::rootBuffer(add.getInputs()[0]) == dxRoot;
    const bool dxIsB = rt::rootBuffer(add.getInputs()[1]) == dxRoot;
    if (dxIsA == dxIsB || rt::constNamed(add, dxIsA ? "a_dtype" : "b_dtype") !=
                              rt::constNamed(norm, "dx_dtype"))
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
    SmallVector<Value> outs{add.getOutputs()[0]};
    outs.append(norm.getOutputs().begin() + 1, norm.getOutputs().end());
    // layernorm_bwd_add's constants: the layernorm's, then the dtypes of
    // resid (the add's other operand) and sum (the add's out).
    SmallVector<Attribute> consts(norm.getConsts().begin(),
                                  norm.getConsts().end());
    consts.push_back(rt::constAttrNamed(add, dxIsA ? "b_dtype" : "a_dtype"));
    consts.push_back(rt::constAttrNamed(add, "out_dtype"));
    auto [buffers, fields] = rt::epilogueOf(add);
    OpBuilder b(add);
    rt::KernelOp fusedOp =
        rt::createWithEpilogue(b, add.getLoc(), "layernorm_bwd_add", ins, outs,
                               consts, buffers, fields);
    // The FP8 statistics' slot names (rt.fp8_stat) stay with the cast.
    fusedOp->setDiscardableAttrs(add->getDiscardableAttrDictionary());
    consumed.insert(add.getOperation());
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
