// rt-fuse-qkv-attention: attention reads q, k, v where the qkv GEMM wrote
// them, and its backward writes dq, dk, dv into the packed gradient,
// instead of the split and concat copies around it (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEQKVATTENTION
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// How many constants gptrt_copy_blocks and gptrt_attention_fwd/_bwd take.
constexpr unsigned kCopyConsts = 7, kAttentionConsts = 6;

// A copy_blocks constant and the value it must have.
using WantedConst = std::pair<StringRef, int64_t>;

// The only kernel writing `buffer` (an rt.alloc read through no other
// view), or null.
rt::KernelOp soleWriter(Value buffer) {
  rt::KernelOp writer;
  for (Operation *user : buffer.getUsers()) {
    auto kernel = dyn_cast<rt::KernelOp>(user);
    if (!kernel)
      return {}; // a reshape or another view: not followed here
    if (rt::writes(kernel, buffer)) {
      if (writer)
        return {};
      writer = kernel;
    }
  }
  return writer;
}

class RtFuseQkvAttentionPass
    : public gptc::impl::RtFuseQkvAttentionBase<RtFuseQkvAttentionPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<rt::KernelOp> forwards;
    getOperation().walk([&](rt::KernelOp op) {
      if (op.getKernel() == "attention_fwd")
        forwards.push_back(op);
    });
    for (rt::KernelOp forward : forwards)
      fuse(forward);
  }

private:
  // The copy_blocks that wrote part `i` (0 q, 1 k, 2 v) of a split of a
  // [rows, 3 width] buffer into a contiguous [rows, width] `part`: its
  // source, else null.
  static Value splitSource(Value part, int i, int64_t rows, int64_t width,
                           int64_t dtype, rt::KernelOp &copy) {
    if (!part.getDefiningOp<rt::AllocOp>())
      return {};
    copy = soleWriter(part);
    if (!copy || copy.getKernel() != "copy_blocks" ||
        copy.getInputs().size() != 1 || copy.getConsts().size() != kCopyConsts)
      return {};
    const WantedConst want[] = {
        {"outer", rows},           {"len", width},    {"dst_stride", width},
        {"src_stride", 3 * width}, {"dst_offset", 0}, {"src_offset", i * width},
        {"dtype", dtype}};
    for (auto [name, value] : want)
      if (rt::constNamed(copy, name) != value)
        return {};
    return copy.getInputs()[0];
  }

  // The copy_blocks that reads gradient part `i` into a [rows, 3 width]
  // buffer (the concat), the only other user of `part`: its destination,
  // else null.
  static Value concatDestination(Value part, int i, int64_t rows, int64_t width,
                                 int64_t dtype, rt::KernelOp producer,
                                 rt::KernelOp &copy) {
    if (!part.getDefiningOp<rt::AllocOp>())
      return {};
    for (Operation *user : part.getUsers()) {
      if (user == producer.getOperation())
        continue;
      auto kernel = dyn_cast<rt::KernelOp>(user);
      if (!kernel || copy)
        return {};
      copy = kernel;
    }
    if (!copy || copy.getKernel() != "copy_blocks" ||
        copy.getInputs().size() != 1 || copy.getInputs()[0] != part ||
        copy.getOutputs().size() != 1 ||
        copy.getConsts().size() != kCopyConsts ||
        !producer->isBeforeInBlock(copy))
      return {};
    const WantedConst want[] = {
        {"outer", rows},           {"len", width},
        {"dst_stride", 3 * width}, {"src_stride", width},
        {"dst_offset", i * width}, {"src_offset", 0},
        {"dtype", dtype}};
    for (auto [name, value] : want)
      if (rt::constNamed(copy, name) != value)
        return {};
    return copy.getOutputs()[0];
  }

  void fuse(rt::KernelOp forward) {
    if (forward.getInputs().size() != 3 || forward.getOutputs().size() != 2 ||
        forward.getConsts().size() != kAttentionConsts)
      return;
    ArrayAttr consts = forward.getConsts();
    const int64_t rows = rt::constNamed(forward, "batch") *
                         rt::constNamed(forward, "seq"),
                  width = rt::constNamed(forward, "width"),
                  dtype = rt::constNamed(forward, "dtype");
    // q, k, v: the three parts of one split, read by nothing but this
    // attention and its backward (same constants, same operand positions).
    Value qkv;
    SmallVector<rt::KernelOp, 3> splits(3);
    for (int i = 0; i < 3; ++i) {
      Value source =
          splitSource(forward.getInputs()[i], i, rows, width, dtype, splits[i]);
      if (!source || (qkv && source != qkv))
        return;
      qkv = source;
    }
    SmallVector<rt::KernelOp> backwards;
    Operation *lastRead = forward;
    for (int i = 0; i < 3; ++i)
      for (Operation *user : forward.getInputs()[i].getUsers()) {
        if (user == forward.getOperation() || user == splits[i].getOperation())
          continue;
        auto kernel = dyn_cast<rt::KernelOp>(user);
        if (!kernel || kernel.getKernel() != "attention_bwd" ||
            kernel.getInputs().size() != 6 || kernel.getOutputs().size() != 3 ||
            kernel.getConsts() != consts ||
            kernel.getInputs()[1 + i] != forward.getInputs()[i])
          return;
        if (!llvm::is_contained(backwards, kernel))
          backwards.push_back(kernel);
        if (lastRead->isBeforeInBlock(kernel))
          lastRead = kernel;
      }
    for (rt::KernelOp backward : backwards)
      for (int i = 0; i < 3; ++i)
        if (backward.getInputs()[1 + i] != forward.getInputs()[i])
          return;
    // The packed buffer is read where the parts were: it must keep its
    // values from the first split to the last attention.
    Operation *firstSplit = splits[0];
    for (rt::KernelOp split : splits) {
      if (!split->isBeforeInBlock(forward))
        return;
      if (split->isBeforeInBlock(firstSplit))
        firstSplit = split;
    }
    if (rt::touchedBetween(firstSplit, lastRead, qkv, /*reads=*/false))
      return;
    // Each backward's dq, dk, dv: the three parts of one concat.
    struct Packed {
      rt::KernelOp backward;
      Value dqkv;
      SmallVector<rt::KernelOp, 3> concats;
    };
    SmallVector<Packed> packed;
    for (rt::KernelOp backward : backwards) {
      Packed p{backward, {}, SmallVector<rt::KernelOp, 3>(3)};
      for (int i = 0; i < 3; ++i) {
        Value dest = concatDestination(backward.getOutputs()[i], i, rows, width,
                                       dtype, backward, p.concats[i]);
        if (!dest || (p.dqkv && dest != p.dqkv))
          return;
        p.dqkv = dest;
      }
      // dqkv is written at the backward now: defined before it (an
      // rt.alloc moves up), untouched through any view until the last
      // concat.
      Operation *def = p.dqkv.getDefiningOp();
      if (def && backward->isBeforeInBlock(def) && !isa<rt::AllocOp>(def))
        return;
      Operation *lastConcat = p.concats[0];
      for (rt::KernelOp concat : p.concats)
        if (lastConcat->isBeforeInBlock(concat))
          lastConcat = concat;
      SmallVector<Operation *, 3> concatOps(p.concats.begin(), p.concats.end());
      if (rt::touchedBetween(backward, lastConcat, p.dqkv, /*reads=*/true,
                             concatOps))
        return;
      packed.push_back(std::move(p));
    }

    OpBuilder b(forward);
    SmallVector<rt::KernelOp> packedBackwards;
    auto packedForward = rt::KernelOp::create(
        b, forward.getLoc(), "attention_fwd_packed", ValueRange{qkv},
        forward.getOutputs(), /*stream=*/0, consts);
    for (Packed &p : packed) {
      Operation *def = p.dqkv.getDefiningOp();
      if (def && p.backward->isBeforeInBlock(def))
        def->moveBefore(p.backward);
      b.setInsertionPoint(p.backward);
      ValueRange ins = p.backward.getInputs();
      packedBackwards.push_back(rt::KernelOp::create(
          b, p.backward.getLoc(), "attention_bwd_packed",
          ValueRange{ins[0], qkv, ins[4], ins[5]}, ValueRange{p.dqkv},
          /*stream=*/0, consts));
      SmallVector<Value> grads(p.backward.getOutputs());
      for (rt::KernelOp concat : p.concats)
        concat.erase();
      p.backward.erase();
      for (Value grad : grads)
        eraseIfUnused(grad);
    }
    SmallVector<Value> parts(forward.getInputs());
    forward.erase();
    for (rt::KernelOp split : splits)
      split.erase();
    for (Value part : parts)
      eraseIfUnused(part);
    ++fused;
    // The attention projection's FP8 input: its amax taken as it is
    // written.
    if (rt::foldFollowingAmax(packedForward, "out",
                              rt::constNamed(packedForward, "dtype")))
      ++amaxFused;
    // And the qkv GEMM's FP8 output gradient: the packed dqkv's amax.
    for (rt::KernelOp backward : packedBackwards)
      if (rt::foldFollowingAmax(backward, "dqkv",
                                rt::constNamed(backward, "dtype")))
        ++amaxFused;
  }

  static void eraseIfUnused(Value buffer) {
    if (Operation *def = buffer.getDefiningOp();
        def && buffer.use_empty() && isa<rt::AllocOp>(def))
      def->erase();
  }
};

} // namespace
