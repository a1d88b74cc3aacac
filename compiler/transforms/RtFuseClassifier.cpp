// rt-fuse-classifier: the cross-entropy forward and its backward become one
// cross_entropy_fwd_bwd kernel that reads the logits once (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSECLASSIFIER
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

class RtFuseClassifierPass
    : public gptc::impl::RtFuseClassifierBase<RtFuseClassifierPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> forwards;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "cross_entropy_fwd")
        forwards.push_back(op);
    });
    for (rt::KernelOp forward : forwards)
      fuse(forward);
  }

private:
  // cross_entropy_fwd(logits, targets) -> loss, lse, then
  // cross_entropy_bwd(dloss, logits, targets, lse) -> dlogits: one
  // cross_entropy_fwd_bwd where the backward was.
  void fuse(rt::KernelOp forward) {
    // Both kernels, and cross_entropy_fwd_bwd, take the same constants
    // (rows, vocab, padded_vocab, ignore_index, the logits' dtype), in the
    // same order: the fused kernel takes them as they are.
    if (forward.getInputs().size() != 2 || forward.getOutputs().size() != 2)
      return;
    Value logits = forward.getInputs()[0], targets = forward.getInputs()[1];
    Value loss = forward.getOutputs()[0], lse = forward.getOutputs()[1];
    auto backward = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(forward, lse));
    if (!backward || backward.getKernel() != "cross_entropy_bwd" ||
        backward.getInputs().size() != 4 || backward.getOutputs().size() != 1 ||
        backward.getInputs()[1] != logits ||
        backward.getInputs()[2] != targets || backward.getInputs()[3] != lse ||
        backward.getConsts() != forward.getConsts())
      return;
    if (!untouchedBetween(forward, backward, {logits, targets, loss, lse}))
      return;
    Value dloss = backward.getInputs()[0], dlogits = backward.getOutputs()[0];
    OpBuilder b(backward);
    auto fusedKernel = rt::KernelOp::create(
        b, backward.getLoc(), "cross_entropy_fwd_bwd",
        ValueRange{dloss, logits, targets}, ValueRange{loss, lse, dlogits},
        /*stream=*/0, forward.getConsts());
    backward.erase();
    forward.erase();
    ++fused;
    fuseAmax(fusedKernel);
  }

  // cross_entropy_fwd_bwd(...) -> ..., dlogits, then amax(dlogits) -> m
  // (the FP8 grad_input / grad_weight GEMMs of the classifier read the
  // gradient): the amax in cross_entropy_fwd_bwd's epilogue, which a GPU
  // takes as it stores the gradient rather than in a second read of it.
  void fuseAmax(rt::KernelOp kernel) {
    if (rt::foldFollowingAmax(kernel, "dlogits",
                              rt::constNamed(kernel, "dtype")))
      ++amaxFused;
  }

  // The forward now runs where the backward did: nothing in between may
  // write its inputs or touch its outputs (through any view, or in the same
  // persistent arena).
  static bool untouchedBetween(rt::KernelOp forward, rt::KernelOp backward,
                               ArrayRef<Value> buffers) {
    for (Value buffer : buffers)
      if (rt::touchedBetween(forward, backward, buffer, /*reads=*/true))
        return false;
    return true;
  }
};

} // namespace
