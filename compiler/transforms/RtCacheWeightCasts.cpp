// rt-cache-weight-casts: the kernels that only derive values from the
// parameters (their bf16 copies, FP8 amaxes, scales and codes) move out of
// train_step into a cast_weights entry whose results persist in a
// weight_cache arena (see Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace gptc {
#define GEN_PASS_DEF_RTCACHEWEIGHTCASTS
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// Kernels whose outputs are a pure function of their inputs: with only
// parameters (or values derived from them) as inputs, their results change
// only when the parameters do.
bool derivesValues(StringRef kernel) {
  return llvm::is_contained(
      {StringRef("convert"), StringRef("amax"), StringRef("scale_from_amax"),
       StringRef("quantize_fp8"), StringRef("quantize_fp8_transposed"),
       StringRef("quantize_fp8_dual"), StringRef("scale_quantize_fp8"),
       StringRef("scale_quantize_fp8_dual"), StringRef("amax_rows"),
       StringRef("row_scales"), StringRef("quantize_rows"),
       StringRef("quantize_rows_transposed")},
      kernel);
}

bool isParamView(Value buffer) {
  auto view = rt::rootBuffer(buffer).getDefiningOp<rt::ViewOp>();
  return view && view.getArena() == "params";
}

// The kernels of one entry point that cast parameters, with a key per
// kernel that is equal for the same computation in another entry point.
struct EntryCasts {
  func::FuncOp func;
  llvm::SetVector<Operation *> kernels;
  // Root buffer (an rt.alloc) written by a kernel of `kernels`.
  llvm::MapVector<Value, std::string> rootKeys;
  DenseMap<Operation *, std::string> kernelKeys;
};

class RtCacheWeightCastsPass
    : public gptc::impl::RtCacheWeightCastsBase<RtCacheWeightCastsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("cast_weights") ||
        module.lookupSymbol("weight_cache")) {
      module.emitError("already has @cast_weights or @weight_cache; run "
                       "rt-cache-weight-casts once");
      return signalPassFailure();
    }
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    if (!train || train.isExternal())
      return;
    EntryCasts trainCasts = findCasts(train);
    if (trainCasts.kernels.empty())
      return;
    // The same computation in eval_step or logits reads the cache too.
    llvm::StringSet<> canonical, trainRoots;
    for (Operation *kernel : trainCasts.kernels)
      canonical.insert(trainCasts.kernelKeys.lookup(kernel));
    for (auto &[root, key] : trainCasts.rootKeys)
      trainRoots.insert(key);
    std::vector<EntryCasts> others;
    for (StringRef name : {"eval_step", "logits"}) {
      auto func = module.lookupSymbol<func::FuncOp>(name);
      if (!func || func.isExternal())
        continue;
      EntryCasts casts = findCasts(func);
      // The same kernel, and every output a buffer train_step's casts
      // write too (the same type: a view of the cache can replace it).
      casts.kernels.remove_if([&](Operation *kernel) {
        return !canonical.contains(casts.kernelKeys.lookup(kernel)) ||
               llvm::any_of(cast<rt::KernelOp>(kernel).getOutputs(),
                            [&](Value out) {
                              return !trainRoots.contains(
                                  casts.rootKeys.lookup(rt::rootBuffer(out)));
                            });
      });
      others.push_back(std::move(casts));
    }

    // A cast result read outside the casts, in any entry, is cached; the
    // others are scratch of cast_weights.
    llvm::StringSet<> cachedKeys;
    auto noteOutsideReads = [&](const EntryCasts &casts) {
      for (auto &[root, key] : casts.rootKeys) {
        if (!writtenByCasts(casts, root))
          continue;
        for (Value view : rt::viewsOf(root))
          for (Operation *user : view.getUsers())
            if (!isa<rt::ReshapeOp>(user) && !casts.kernels.contains(user))
              cachedKeys.insert(key);
      }
    };
    noteOutsideReads(trainCasts);
    for (const EntryCasts &casts : others)
      noteOutsideReads(casts);

    llvm::StringMap<int64_t> cacheOffsets;
    int64_t cacheBytes =
        buildCastWeights(module, trainCasts, cachedKeys, cacheOffsets);
    rewrite(trainCasts, cacheOffsets);
    for (EntryCasts &casts : others)
      rewrite(casts, cacheOffsets);
    eraseDeadBuffers(train);
    for (EntryCasts &casts : others)
      eraseDeadBuffers(casts.func);

    OpBuilder builder(&getContext());
    Operation *lastArena = nullptr;
    for (auto arena : module.getOps<rt::ArenaOp>())
      lastArena = arena;
    if (lastArena)
      builder.setInsertionPointAfter(lastArena);
    else
      builder.setInsertionPointToStart(module.getBody());
    rt::ArenaOp::create(builder, module.getLoc(), "weight_cache",
                        rt::ArenaKind::WeightCache,
                        llvm::alignTo(cacheBytes, alignment), alignment);
    cachedBytes = cacheBytes;
  }

private:
  EntryCasts findCasts(func::FuncOp func) {
    EntryCasts casts;
    casts.func = func;
    // Parameters change only in optimizer_step; an entry that writes them
    // itself keeps its casts.
    bool writesParams = false;
    func.walk([&](Operation *op) {
      auto kernel = dyn_cast<rt::KernelOp>(op);
      ValueRange written = kernel ? ValueRange(kernel.getOutputs())
                                  : ValueRange(op->getOperands());
      if (!isa<rt::ViewOp, rt::ReshapeOp, rt::AllocOp, rt::BindOp>(op))
        writesParams |= llvm::any_of(written, [](Value v) {
          return isa<MemRefType>(v.getType()) && isParamView(v);
        });
    });
    if (writesParams)
      return casts;

    for (auto kernel : func.getOps<rt::KernelOp>()) {
      // A producer's fused epilogue (a convert's amax or cast) stays with
      // the step, where its statistics are recorded.
      if (!derivesValues(kernel.getKernel()) || rt::hasEpilogue(kernel))
        continue;
      std::string key;
      llvm::raw_string_ostream os(key);
      os << kernel.getKernel() << " " << kernel.getConsts() << " "
         << kernel->getDiscardableAttrDictionary() << " (";
      bool derived = true;
      for (Value in : kernel.getInputs()) {
        Value root = rt::rootBuffer(in);
        if (isParamView(in))
          os << "param " << cast<rt::ViewOp>(root.getDefiningOp()).getOffset();
        else if (auto it = casts.rootKeys.find(root);
                 it != casts.rootKeys.end())
          os << "{" << it->second << "}";
        else
          derived = false;
        os << " : " << in.getType() << ", ";
      }
      if (!derived)
        continue;
      os << ") -> (";
      SmallVector<Value> roots;
      for (Value out : kernel.getOutputs()) {
        Value root = rt::rootBuffer(out);
        if (!root.getDefiningOp<rt::AllocOp>() || casts.rootKeys.count(root) ||
            !onlyWriter(kernel, root) || llvm::is_contained(roots, root)) {
          derived = false;
          break;
        }
        roots.push_back(root);
        os << out.getType() << ", ";
      }
      if (!derived)
        continue;
      os << ")";
      casts.kernels.insert(kernel);
      casts.kernelKeys[kernel] = key;
      for (auto [i, root] : llvm::enumerate(roots)) {
        std::string rootKey;
        llvm::raw_string_ostream(rootKey)
            << key << " #" << i << " " << root.getType();
        casts.rootKeys[root] = rootKey;
      }
    }
    return casts;
  }

  // Whether `kernel` is the only op that writes `root` (through any view),
  // and nothing uses it before.
  static bool onlyWriter(rt::KernelOp kernel, Value root) {
    for (Value view : rt::viewsOf(root))
      for (Operation *user : view.getUsers()) {
        if (user == kernel.getOperation() || isa<rt::ReshapeOp>(user))
          continue;
        if (user->getBlock() != kernel->getBlock() ||
            user->isBeforeInBlock(kernel))
          return false;
        auto other = dyn_cast<rt::KernelOp>(user);
        if (!other || llvm::is_contained(other.getOutputs(), view))
          return false;
      }
    return true;
  }

  // Appends @cast_weights with train_step's casts in their order; returns
  // the bytes of the cache and fills the offset of each cached root key.
  int64_t buildCastWeights(ModuleOp module, const EntryCasts &train,
                           const llvm::StringSet<> &cachedKeys,
                           llvm::StringMap<int64_t> &cacheOffsets) {
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(module.getBody());
    Location loc = func::FuncOp(train.func).getLoc();
    auto func = func::FuncOp::create(builder, loc, "cast_weights",
                                     builder.getFunctionType({}, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToStart(body);

    IRMapping mapping;
    int64_t bytes = 0;
    std::function<Value(Value)> remap = [&](Value v) -> Value {
      if (Value mapped = mapping.lookupOrNull(v))
        return mapped;
      Operation *def = v.getDefiningOp();
      if (auto reshape = dyn_cast_or_null<rt::ReshapeOp>(def))
        remap(reshape.getSource());
      Operation *copy = builder.clone(*def, mapping);
      return copy->getResult(0);
    };
    // Identical casts (the same key) are made once: a kernel all of whose
    // outputs were made already reads those.
    llvm::StringMap<Value> made;
    for (Operation *op : train.kernels) {
      auto kernel = cast<rt::KernelOp>(op);
      bool again = llvm::all_of(kernel.getOutputs(), [&](Value out) {
        return made.contains(train.rootKeys.lookup(rt::rootBuffer(out)));
      });
      for (Value out : kernel.getOutputs()) {
        Value root = rt::rootBuffer(out);
        const std::string &key = train.rootKeys.lookup(root);
        if (again) {
          mapping.map(root, made.lookup(key));
          continue;
        }
        auto type = cast<MemRefType>(root.getType());
        Value fresh;
        if (cachedKeys.contains(key)) {
          int64_t offset = llvm::alignTo(bytes, alignment);
          auto view =
              rt::ViewOp::create(builder, loc, type, "weight_cache", offset);
          bytes = offset + view.getSizeInBytes();
          cacheOffsets[key] = offset;
          fresh = view;
        } else {
          fresh = rt::AllocOp::create(builder, loc, type);
        }
        mapping.map(root, fresh);
        made[key] = fresh;
      }
      if (again)
        continue;
      for (Value operand : kernel->getOperands())
        remap(operand);
      builder.clone(*kernel, mapping);
      ++hoisted;
    }
    func::ReturnOp::create(builder, loc);
    return bytes;
  }

  // Replaces each cached root by its view of the cache and removes the
  // casts (their scratch buffers die with them).
  void rewrite(EntryCasts &casts,
               const llvm::StringMap<int64_t> &cacheOffsets) {
    for (auto &[root, key] : casts.rootKeys) {
      auto it = cacheOffsets.find(key);
      if (it == cacheOffsets.end())
        continue;
      if (!writtenByCasts(casts, root))
        continue;
      auto alloc = root.getDefiningOp<rt::AllocOp>();
      OpBuilder builder(alloc);
      Value view = rt::ViewOp::create(builder, alloc.getLoc(), alloc.getType(),
                                      "weight_cache", it->second);
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    for (Operation *kernel : llvm::reverse(casts.kernels))
      kernel->erase();
    casts.kernels.clear();
  }

  // The buffer definitions the removed casts leave without users.
  static void eraseDeadBuffers(func::FuncOp func) {
    for (bool changed = true; changed;) {
      SmallVector<Operation *> dead;
      func.walk([&](Operation *op) {
        if (isa<rt::AllocOp, rt::ViewOp, rt::ReshapeOp>(op) && op->use_empty())
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      changed = !dead.empty();
    }
  }

  static bool writtenByCasts(const EntryCasts &casts, Value root) {
    return llvm::any_of(casts.kernels, [&](Operation *k) {
      return llvm::any_of(cast<rt::KernelOp>(k).getOutputs(), [&](Value out) {
        return rt::rootBuffer(out) == root;
      });
    });
  }
};

} // namespace
