// Small queries on rt.kernel ops and buffers shared by the rt-level passes
// (rt-fuse-gemm-epilogue, rt-fuse-add-layernorm, rt-fuse-classifier,
// rt-fuse-dual-cast, rt-fuse-delayed-dual-cast, rt-hoist-transposed-casts,
// rt-fuse-producer-cast, rt-fuse-producer-dual-cast,
// rt-fuse-grad-accumulation, rt-fuse-cast-scale, rt-fuse-rowwise-cast,
// rt-batch-fp8-state-updates, rt-batch-fp8-state-scales).
#ifndef GPTC_COMPILER_TRANSFORMS_RTKERNELQUERIES_H
#define GPTC_COMPILER_TRANSFORMS_RTKERNELQUERIES_H

#include "compiler/transforms/RtEpilogue.h"
#include "dialects/rt/KernelTable.h"
#include "dialects/rt/RtDialect.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

namespace gptc::rt {

// Constants by the names the kernel table (runtime/abi/gptrt_kernels.def)
// gives them, never by position: a row that gains or reorders constants
// then cannot silently make a pass read the wrong one. A pass asking for a
// constant its kernel's row does not have, or that the call does not pass
// (only a trailing descriptor may be left out), is a compiler bug.

// The position of the constant `name` among kernel `kernel`'s constants,
// for building or slicing a constant array by name.
// (Checked in release builds too: reading past a call's constants would be
// a silent wrong value, not a crash.)
inline unsigned constIndex(llvm::StringRef kernel, llvm::StringRef name) {
  const KernelSignature *row = lookupKernel(kernel);
  std::optional<unsigned> index = row ? row->constantIndex(name) : std::nullopt;
  if (!index)
    llvm::report_fatal_error(llvm::Twine("gptc bug: kernel \"") + kernel +
                             "\" has no constant '" + name +
                             "' in runtime/abi/gptrt_kernels.def");
  return *index;
}

// The position of `op`'s constant `name`, which the call must pass.
inline unsigned passedConstIndex(KernelOp op, llvm::StringRef name) {
  const unsigned index = constIndex(op.getKernel(), name);
  if (index >= op.getConsts().size())
    llvm::report_fatal_error(llvm::Twine("gptc bug: a call of \"") +
                             op.getKernel() + "\" without its constant '" +
                             name + "'");
  return index;
}

// The constant of `op` its kernel's row calls `name`, as the attribute the
// call passes (an i64, f64, table or descriptor attribute).
inline mlir::Attribute constAttrNamed(KernelOp op, llvm::StringRef name) {
  return op.getConsts()[passedConstIndex(op, name)];
}

// The i64 constant of `op` its kernel's row calls `name`.
inline int64_t constNamed(KernelOp op, llvm::StringRef name) {
  return mlir::cast<mlir::IntegerAttr>(constAttrNamed(op, name)).getInt();
}

// `op`'s constants from the one its row calls `name` to the last the call
// passes, in order (the scale recipe a state_ cast ends with, say).
inline llvm::ArrayRef<mlir::Attribute> constsFrom(KernelOp op,
                                                  llvm::StringRef name) {
  return op.getConsts().getValue().drop_front(passedConstIndex(op, name));
}

// `op`'s constants with the i64 constant its row calls `name` set to
// `value`, the others as they are (for op.setConstsAttr).
inline mlir::ArrayAttr withConstNamed(KernelOp op, llvm::StringRef name,
                                      int64_t value) {
  const unsigned index = passedConstIndex(op, name);
  mlir::Builder b(op.getContext());
  llvm::SmallVector<mlir::Attribute> consts(op.getConsts().getValue());
  consts[index] = b.getI64IntegerAttr(value);
  return b.getArrayAttr(consts);
}

// Whether `op` is a kernel that writes `buffer`.
inline bool writes(mlir::Operation *op, mlir::Value buffer) {
  auto kernel = mlir::dyn_cast<KernelOp>(op);
  return kernel && llvm::is_contained(kernel.getOutputs(), buffer);
}

// The first op after `from` in its block that uses `value`, or null.
inline mlir::Operation *nextUser(mlir::Operation *from, mlir::Value value) {
  mlir::Operation *first = nullptr;
  for (mlir::Operation *user : value.getUsers())
    if (user != from && from->isBeforeInBlock(user) &&
        (!first || user->isBeforeInBlock(first)))
      first = user;
  return first;
}

// The kernels under `root` that one of `forms` names (nameOf(form)), each
// with its form, in walk order: collected before any is fused, since
// fusing erases and creates kernels.
template <typename Form, size_t N, typename NameOf>
llvm::SmallVector<std::pair<KernelOp, const Form *>>
kernelsNamedBy(mlir::Operation *root, const Form (&forms)[N], NameOf nameOf) {
  llvm::SmallVector<std::pair<KernelOp, const Form *>> found;
  root->walk([&](KernelOp op) {
    for (const Form &form : forms)
      if (op.getKernel() == nameOf(form))
        found.push_back({op, &form});
  });
  return found;
}

// The buffer a value views: through rt.reshape to its rt.alloc or rt.view.
inline mlir::Value rootBuffer(mlir::Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getSource();
  return value;
}

// Every view of `root`'s buffer: itself and its reshapes, transitively.
inline llvm::SmallVector<mlir::Value> viewsOf(mlir::Value root) {
  llvm::SmallVector<mlir::Value> views{root};
  for (size_t i = 0; i < views.size(); ++i)
    for (mlir::Operation *user : views[i].getUsers())
      if (auto reshape = mlir::dyn_cast<ReshapeOp>(user))
        views.push_back(reshape.getResult());
  return views;
}

// Whether two buffers may share bytes: the same buffer, or views of one
// arena whose byte ranges overlap. An rt.null owns no bytes.
inline bool mayAlias(mlir::Value a, mlir::Value b) {
  mlir::Value rootA = rootBuffer(a), rootB = rootBuffer(b);
  if (rootA.getDefiningOp<NullOp>() || rootB.getDefiningOp<NullOp>())
    return false;
  if (rootA == rootB)
    return true;
  auto viewA = rootA.getDefiningOp<ViewOp>();
  auto viewB = rootB.getDefiningOp<ViewOp>();
  if (!viewA || !viewB || viewA.getArenaAttr() != viewB.getArenaAttr())
    return false;
  const int64_t beginA = viewA.getOffset(), beginB = viewB.getOffset();
  return beginA < beginB + viewB.getSizeInBytes() &&
         beginB < beginA + viewA.getSizeInBytes();
}

// Bytes between two amax histories of `length` f32 in the fp8_state arena
// (rt-bufferize packs them at 64-byte alignment), so a history at offset
// o is state o / fp8StateStride(length).
inline int64_t fp8StateStride(int64_t length) {
  return int64_t(llvm::alignTo(4 * length, 64));
}

// Whether `op` may write `buffer` -- or, with `reads`, use it at all: a
// kernel whose outputs (any operand, with `reads`) may alias it
// (mayAlias), or any other op (a collective, an event) with such an
// operand. Buffer definitions (rt.alloc, rt.view, rt.reshape) touch
// nothing.
inline bool touches(mlir::Operation *op, mlir::Value buffer, bool reads) {
  if (mlir::isa<AllocOp, ViewOp, ReshapeOp, NullOp>(op))
    return false;
  auto kernel = mlir::dyn_cast<KernelOp>(op);
  mlir::ValueRange operands = kernel && !reads
                                  ? mlir::ValueRange(kernel.getOutputs())
                                  : mlir::ValueRange(op->getOperands());
  return llvm::any_of(operands, [&](mlir::Value v) {
    return mlir::isa<mlir::MemRefType>(v.getType()) && mayAlias(v, buffer);
  });
}

// The last op before `op` in its block that writes `buffer` (or touches
// it without being a kernel), or null.
inline mlir::Operation *lastWriter(mlir::Operation *op, mlir::Value buffer) {
  for (mlir::Operation *prev = op->getPrevNode(); prev;
       prev = prev->getPrevNode())
    if (touches(prev, buffer, /*reads=*/false))
      return prev;
  return nullptr;
}

// Whether an op strictly between `from` and `to` (one block, `from` first;
// ops in `ignore` aside) touches `buffer` (see touches).
inline bool touchedBetween(mlir::Operation *from, mlir::Operation *to,
                           mlir::Value buffer, bool reads,
                           llvm::ArrayRef<mlir::Operation *> ignore = {}) {
  for (mlir::Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (!llvm::is_contained(ignore, op) && touches(op, buffer, reads))
      return true;
  return false;
}

// Whether an op before `to` in its block touches `buffer` (see touches).
inline bool touchedBefore(mlir::Operation *to, mlir::Value buffer, bool reads) {
  for (mlir::Operation *op = &to->getBlock()->front(); op != to;
       op = op->getNextNode())
    if (touches(op, buffer, reads))
      return true;
  return false;
}

// Whether the outputs of `later` (after `producer` in one block) can be
// written where `producer` runs, so that `later`'s work folds into it: each
// is an rt.alloc or rt.view itself (not a reshape), and nothing touches it
// (or, for a view, any overlapping view of its arena) between `producer`
// and `later`.
inline bool outputsCanMoveUp(mlir::Operation *producer, KernelOp later) {
  for (mlir::Value out : later.getOutputs()) {
    mlir::Operation *def = out.getDefiningOp();
    if (!def || !mlir::isa<AllocOp, ViewOp>(def) ||
        touchedBetween(producer, later, out, /*reads=*/true))
      return false;
  }
  return true;
}

// Moves the definitions of `later`'s outputs that come after `producer`
// before it (after outputsCanMoveUp).
inline void moveOutputDefsBefore(mlir::Operation *producer, KernelOp later) {
  for (mlir::Value out : later.getOutputs())
    if (mlir::Operation *def = out.getDefiningOp();
        producer->isBeforeInBlock(def))
      def->moveBefore(producer);
}

// The first kernel named `name` after `after` that reads a view of `root`.
inline KernelOp nextKernelReading(mlir::Operation *after, mlir::Value root,
                                  llvm::StringRef name) {
  KernelOp first;
  for (mlir::Value view : viewsOf(root))
    for (mlir::Operation *user : view.getUsers()) {
      auto k = mlir::dyn_cast<KernelOp>(user);
      if (k && k.getKernel() == name &&
          llvm::is_contained(k.getInputs(), view) &&
          after->isBeforeInBlock(k) && (!first || k->isBeforeInBlock(first)))
        first = k;
    }
  return first;
}

// Folds the first `amax` after `producer` that reads the whole of its
// output `output` (by its name in the row; stored as `dtype`) into it:
// producer's epilogue (which it has none of yet) takes the amax, of the
// output seen as rows x its last dimension, where producer was. The output
// must not change in between and the amax's buffer must be able to move
// up. Returns the new kernel, or null (nothing changed).
inline KernelOp foldFollowingAmax(KernelOp producer, llvm::StringRef output,
                                  int64_t dtype) {
  if (!takesEpilogue(producer) || hasEpilogue(producer))
    return {};
  mlir::Value out = bufferNamed(producer, output);
  if (!out)
    return {};
  mlir::Value root = rootBuffer(out);
  KernelOp amax = nextKernelReading(producer, root, "amax");
  if (!amax || amax.getInputs().size() != 1 || amax.getOutputs().size() != 1 ||
      amax.getConsts().size() != 2 ||
      constNamed(amax, "n") !=
          mlir::cast<mlir::MemRefType>(root.getType()).getNumElements() ||
      constNamed(amax, "x_dtype") != dtype ||
      touchedBetween(producer, amax, out, /*reads=*/false) ||
      !outputsCanMoveUp(producer, amax))
    return {};
  moveOutputDefsBefore(producer, amax);
  auto type = mlir::cast<mlir::MemRefType>(root.getType());
  const int64_t cols = type.getRank() == 0 ? 1 : type.getShape().back();
  KernelOp fused = withEpilogue(
      producer, {{"amax", amax.getOutputs()[0]}},
      {{"rows", cols == 0 ? 0 : type.getNumElements() / cols},
       {"cols", cols},
       {"out_dtype", dtype}});
  amax.erase();
  return fused;
}

// Whether two buffers are the same bytes: one root buffer, or views of one
// arena at one offset with one size (two rt.view ops of a shared amax
// history, say).
inline bool sameBytes(mlir::Value a, mlir::Value b) {
  mlir::Value rootA = rootBuffer(a), rootB = rootBuffer(b);
  if (rootA == rootB)
    return true;
  auto viewA = rootA.getDefiningOp<ViewOp>();
  auto viewB = rootB.getDefiningOp<ViewOp>();
  return viewA && viewB && viewA.getArenaAttr() == viewB.getArenaAttr() &&
         viewA.getOffset() == viewB.getOffset() &&
         viewA.getSizeInBytes() == viewB.getSizeInBytes();
}

// Whether `op` is a GEMM (gptrt_gemm: any operands, any epilogue).
inline bool isGemm(KernelOp op) { return op.getKernel() == "gemm"; }

// Whether making `twin`'s transposed FP8 copy of x where `cast` makes the
// row-major copy q (one read of x instead of two) keeps no buffer alive
// that the pair did not already hold:
// - nothing but `twin` reads x after `cast` (a forward activation the
//   backward reads only for grad_weight): the transposed copy, one byte an
//   element, is held instead of x;
// - or only GEMMs reading q lie between (an output gradient's two casts);
// - or x is a parameter that nothing in the function writes: its
//   transposed copy is held from the forward to the backward in place of a
//   second read of the f32 weight, one byte a parameter.
inline bool dualCastPays(KernelOp cast, KernelOp twin, mlir::Value x,
                         mlir::Value q) {
  mlir::Value root = rootBuffer(x);
  if (root.getDefiningOp<AllocOp>()) {
    bool onlyTwinAfter = true;
    for (mlir::Value view : viewsOf(root))
      for (mlir::Operation *user : view.getUsers())
        if (!mlir::isa<ReshapeOp>(user) && user != twin.getOperation() &&
            cast->isBeforeInBlock(user))
          onlyTwinAfter = false;
    if (onlyTwinAfter)
      return true;
  }
  if (auto view = root.getDefiningOp<ViewOp>();
      view && view.getArena() == "params") {
    bool written = false;
    for (mlir::Operation &op : *cast->getBlock())
      written |= touches(&op, x, /*reads=*/false);
    if (!written)
      return true;
  }
  for (mlir::Operation *op = cast->getNextNode(); op != twin.getOperation();
       op = op->getNextNode())
    if (auto kernel = mlir::dyn_cast<KernelOp>(op);
        kernel && isGemm(kernel) && !llvm::is_contained(kernel.getInputs(), q))
      return false;
  return true;
}

// The rt.fp8_stat of a dual cast made of `cast` (row-major) and `twin`
// (transposed): one description per FP8 output, an empty one for an output
// without a statistics slot; null when neither had one.
inline mlir::Attribute dualCastStats(mlir::OpBuilder &b, KernelOp cast,
                                     KernelOp twin) {
  if (!cast->hasAttr("rt.fp8_stat") && !twin->hasAttr("rt.fp8_stat"))
    return {};
  auto statOf = [&](KernelOp k) -> mlir::Attribute {
    if (auto stat = k->getAttrOfType<mlir::DictionaryAttr>("rt.fp8_stat"))
      return stat;
    return b.getDictionaryAttr({});
  };
  return b.getArrayAttr({statOf(cast), statOf(twin)});
}

} // namespace gptc::rt

#endif // GPTC_COMPILER_TRANSFORMS_RTKERNELQUERIES_H
