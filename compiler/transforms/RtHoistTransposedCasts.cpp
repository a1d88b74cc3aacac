// rt-hoist-transposed-casts: a transposed FP8 cast that is the last reader
// of a tensor moves up to just after the tensor's producer, so that the
// tensor's buffer dies there and its FP8 copy, half the bytes, is what
// lives until the backward (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTHOISTTRANSPOSEDCASTS
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

bool isTransposedCast(StringRef kernel) {
  return kernel.contains("quantize") && kernel.contains("transposed");
}

class RtHoistTransposedCastsPass
    : public gptc::impl::RtHoistTransposedCastsBase<
          RtHoistTransposedCastsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> casts;
    getOperation().walk([&](rt::KernelOp op) {
      if (isTransposedCast(op.getKernel()) && !op.getInputs().empty())
        casts.push_back(op);
    });
    for (rt::KernelOp cast : casts)
      hoist(cast);
  }

private:
  void hoist(rt::KernelOp cast) {
    Value root = rt::rootBuffer(cast.getInputs()[0]);
    if (!root.getDefiningOp<rt::AllocOp>())
      return;
    // The producer: the last kernel before the cast that writes x.
    rt::KernelOp producer;
    for (Operation *op = cast->getPrevNode(); op && !producer;
         op = op->getPrevNode())
      if (auto kernel = dyn_cast<rt::KernelOp>(op);
          kernel && rt::touches(kernel, root, /*reads=*/false))
        producer = kernel;
    if (!producer || producer->getNextNode() == cast.getOperation())
      return;
    // Only the cast reads x after its producer, so x's buffer dies at the
    // cast: hoisted, it dies with the producer.
    for (Value view : rt::viewsOf(root))
      for (Operation *user : view.getUsers())
        if (!isa<rt::ReshapeOp>(user) && user != cast.getOperation() &&
            user != producer.getOperation() && producer->isBeforeInBlock(user))
          return;
    // Its other inputs (a scale, an amax history) hold their values from
    // the producer on, and nothing in between uses its outputs.
    for (Value in : cast.getInputs())
      if (rt::touchedBetween(producer, cast, in, /*reads=*/false))
        return;
    for (Value out : cast.getOutputs()) {
      Operation *def = out.getDefiningOp();
      if (!def || !isa<rt::AllocOp, rt::ViewOp>(def) ||
          rt::touchedBetween(producer, cast, out, /*reads=*/true))
        return;
    }
    // The buffer definitions the cast uses move with it (views, reshapes
    // and allocs define values only).
    for (Value operand : cast->getOperands())
      if (!movable(operand))
        return;
    for (Value operand : cast->getOperands())
      moveDefinitionAbove(operand, producer);
    cast->moveAfter(producer);
    ++hoisted;
  }

  // Whether `value` is a block argument or made by an rt.alloc, rt.view or
  // a chain of rt.reshape over one.
  static bool movable(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return true;
    if (auto reshape = dyn_cast<rt::ReshapeOp>(def))
      return movable(reshape.getSource());
    return isa<rt::AllocOp, rt::ViewOp>(def);
  }

  // Makes `value` (an rt.alloc, rt.view or a chain of rt.reshape over one)
  // defined before `producer`; values defined earlier stay where they are.
  static void moveDefinitionAbove(Value value, rt::KernelOp producer) {
    Operation *def = value.getDefiningOp();
    if (!def || def->isBeforeInBlock(producer))
      return;
    if (auto reshape = dyn_cast<rt::ReshapeOp>(def))
      moveDefinitionAbove(reshape.getSource(), producer);
    def->moveBefore(producer);
  }
};

} // namespace
