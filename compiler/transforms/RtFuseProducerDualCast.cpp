// rt-fuse-producer-dual-cast: under delayed scaling, a GELU or layernorm
// producer's fused FP8 cast and the transposed cast of its output -- the
// output's only other reader -- become one call that writes both FP8
// layouts and never stores the output (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEPRODUCERDUALCAST
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// A producer that can take the dual cast in its epilogue, the transposed
// cast of its output it takes in, and that output's name in its row.
struct ProducerForm {
  StringRef producer;
  StringRef transposed;
  StringRef output;
  // The layernorms' output is rows x width (their constants) stored as
  // out_dtype: the epilogue's rows, cols and out_dtype must repeat them.
  bool rowsOfTheProducer;
};

const ProducerForm kForms[] = {
    {"gelu_fwd", "state_quantize_fp8_transposed", "out", false},
    {"gelu_bwd", "state_quantize_fp8_transposed_bgrad", "dx", false},
    {"layernorm_fwd", "state_quantize_fp8_transposed", "out", true},
    {"add_layernorm_fwd", "state_quantize_fp8_transposed", "out", true},
};
// gptrt_fp8_state_scale's constants (its recipe), which the state_ casts
// end with, from history_length on.
constexpr unsigned kScaleConsts = 6;

class RtFuseProducerDualCastPass
    : public gptc::impl::RtFuseProducerDualCastBase<
          RtFuseProducerDualCastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto [producer, form] : rt::kernelsNamedBy(
             getOperation(), kForms,
             [](const ProducerForm &form) { return form.producer; }))
      fuse(producer, *form);
  }

private:
  void fuse(rt::KernelOp producer, const ProducerForm &form) {
    // A producer whose epilogue casts (scale and q) and does not yet write
    // the transposed codes.
    Value y = rt::bufferNamed(producer, form.output),
          scale = rt::bufferNamed(producer, "scale");
    if (!y || !scale || !rt::bufferNamed(producer, "q") ||
        rt::bufferNamed(producer, "q_t"))
      return;
    const int64_t rows = *rt::epilogueField(producer, "rows"),
                  cols = *rt::epilogueField(producer, "cols"),
                  outDtype = *rt::epilogueField(producer, "out_dtype"),
                  format = *rt::epilogueField(producer, "format");
    if (*rt::epilogueField(producer, "transpose") != 0) // already transposed
      return;
    if (form.rowsOfTheProducer &&
        (rt::constNamed(producer, "rows") != rows ||
         rt::constNamed(producer, "width") != cols ||
         rt::constNamed(producer, "out_dtype") != outDtype))
      return;
    Value root = rt::rootBuffer(y);
    if (!root.getDefiningOp<rt::AllocOp>())
      return;

    // The next kernel that reads y: the transposed cast of all of it, in
    // the producer's format and storage, and the last reader of y.
    rt::KernelOp cast;
    for (Operation *op = producer->getNextNode(); op && !cast;
         op = op->getNextNode())
      if (rt::touches(op, root, /*reads=*/true)) {
        cast = dyn_cast<rt::KernelOp>(op);
        if (!cast)
          return;
      }
    const bool bgrad = form.transposed.ends_with("_bgrad");
    const unsigned castOwn = bgrad ? 6 : 5; // its constants before the scale's
    if (!cast || cast.getKernel() != form.transposed ||
        cast.getInputs().size() != 2 ||
        cast.getOutputs().size() != (bgrad ? 3u : 2u) ||
        cast.getConsts().size() != castOwn + kScaleConsts ||
        !rt::sameBytes(cast.getInputs()[0], y) ||
        rt::constNamed(cast, "rows") != rows ||
        rt::constNamed(cast, "cols") != cols ||
        rt::constNamed(cast, "format") != format ||
        rt::constNamed(cast, "x_dtype") != outDtype)
      return;
    for (Value view : rt::viewsOf(root))
      for (Operation *user : view.getUsers())
        if (user != cast.getOperation() && cast->isBeforeInBlock(user) &&
            !isa<rt::ReshapeOp>(user))
          return;

    // The producer's scale is made from the history the cast reads, by
    // the same recipe, and the history keeps its value until the cast (the
    // updates wait for the end of the step): the cast's own scale is the
    // producer's, which later readers of the cast's scale then read.
    Value history = cast.getInputs()[1], castScale = cast.getOutputs().back();
    auto scaleOp =
        dyn_cast_or_null<rt::KernelOp>(rt::lastWriter(producer, scale));
    ArrayRef<Attribute> recipe = rt::constsFrom(cast, "history_length");
    if (!scaleOp || scaleOp.getKernel() != "fp8_state_scale" ||
        scaleOp.getInputs().size() != 1 || scaleOp.getOutputs().size() != 1 ||
        scaleOp.getOutputs()[0] != scale ||
        scaleOp.getConsts().getValue() != recipe ||
        !rt::sameBytes(scaleOp.getInputs()[0], history) ||
        rt::touchedBetween(scaleOp, cast, history, /*reads=*/false) ||
        rt::mayAlias(castScale, scale))
      return;
    Operation *lastScaleUse = cast;
    for (Operation *user : castScale.getUsers())
      if (lastScaleUse->isBeforeInBlock(user))
        lastScaleUse = user;
    if (rt::touchedBetween(producer, lastScaleUse, scale, /*reads=*/false))
      return;
    // The transposed codes (and bias gradient) are written where the
    // producer runs: nothing may use them in between.
    for (Value out : cast.getOutputs().drop_back()) {
      Operation *def = out.getDefiningOp();
      if (!def || !isa<rt::AllocOp, rt::ViewOp>(def) ||
          rt::touchedBetween(producer, cast, out, /*reads=*/true))
        return;
    }
    for (Value out : cast.getOutputs().drop_back())
      if (Operation *def = out.getDefiningOp(); producer->isBeforeInBlock(def))
        def->moveBefore(producer);

    // The epilogue gains q_t (and db) and stat_slot_t (and db_dtype); the
    // output is no longer stored.
    OpBuilder b(producer);
    Attribute stats = rt::dualCastStats(b, producer, cast);
    SmallVector<rt::NamedBuffer> buffers{{form.output, Value()},
                                         {"q_t", cast.getOutputs()[0]}};
    SmallVector<rt::NamedField> fields{
        {"stat_slot_t", rt::constNamed(cast, "stat_slot")}};
    if (bgrad) {
      buffers.push_back({"db", cast.getOutputs()[1]});
      fields.push_back({"db_dtype", rt::constNamed(cast, "db_dtype")});
    }
    rt::KernelOp dual = rt::withEpilogue(producer, buffers, fields);
    if (stats)
      dual->setAttr("rt.fp8_stat", stats);
    Value castX = cast.getInputs()[0];
    cast.erase();
    castScale.replaceAllUsesWith(scale);
    eraseUnused({castScale, castX, history, y});
    ++fused;
  }

  // Erases the definitions of `values` (rt.alloc, rt.view, rt.reshape)
  // nothing uses any more, and then those of what the erased reshapes
  // viewed, as far as nothing else uses them. Each op is looked at only
  // while it exists: a value may be another's reshape source, or twice in
  // the list.
  static void eraseUnused(ArrayRef<Value> values) {
    SmallVector<Operation *> work;
    for (Value value : values)
      if (Operation *def = value.getDefiningOp())
        work.push_back(def);
    SmallPtrSet<Operation *, 8> erased;
    while (!work.empty()) {
      Operation *def = work.pop_back_val();
      if (erased.contains(def) || !def->use_empty() ||
          !isa<rt::AllocOp, rt::ViewOp, rt::ReshapeOp>(def))
        continue;
      if (auto reshape = dyn_cast<rt::ReshapeOp>(def))
        if (Operation *source = reshape.getSource().getDefiningOp())
          work.push_back(source);
      erased.insert(def);
      def->erase();
    }
  }
};

} // namespace
