// rt-fuse-add-layernorm: the residual add and the layernorm that reads its
// result become one add_layernorm_fwd kernel (see Passes.td).
#include "compiler/transforms/Passes.h"
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
    SmallVector<rt::KernelOp> adds;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "add")
        adds.push_back(op);
    });
    for (rt::KernelOp add : adds)
      fuse(add);
  }

private:
  // add(a, b) -> x; layernorm_fwd(x, w, bias) -> out, mean, rstd, with x
  // untouched in between: one add_layernorm_fwd where the layernorm was.
  void fuse(rt::KernelOp add) {
    // gptrt_add's constants: outer, inner, broadcast_b, a, b and out dtypes.
    if (add.getInputs().size() != 2 || add.getOutputs().size() != 1 ||
        add.getConsts().size() != 6 || rt::constAt(add, 2) != 0)
      return;
    Value x = add.getOutputs()[0];
    auto norm = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(add, x));
    // gptrt_layernorm_fwd's constants: rows, width, eps, x and out dtypes.
    if (!norm || norm.getKernel() != "layernorm_fwd" ||
        norm.getInputs().size() != 3 || norm.getInputs()[0] != x ||
        norm.getConsts().size() != 5)
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
    ins.append({norm.getInputs()[1], norm.getInputs()[2]});
    SmallVector<Value> outs{x};
    outs.append(norm.getOutputs().begin(), norm.getOutputs().end());
    ArrayAttr n = norm.getConsts(), a = add.getConsts();
    OpBuilder b(norm);
    rt::KernelOp::create(
        b, norm.getLoc(), "add_layernorm_fwd", ins, outs,
        /*stream=*/0,
        b.getArrayAttr({n[0], n[1], n[2], a[3], a[4], a[5], n[4]}));
    norm.erase();
    add.erase();
    ++fused;
  }
};

} // namespace
