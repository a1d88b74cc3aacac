// The manifest writer (see Manifest.h). Arena indices are positions among
// the module's rt.arena ops, the same order rt-to-llvm uses.
#include "compiler/target/Manifest.h"

#include "dialects/rt/RtDialect.h"
#include "runtime/abi/KernelTableFingerprint.h"
#include "runtime/abi/gptrt.h"
#include "runtime/abi/manifest.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <vector>

using namespace mlir;
namespace pb = gptc::manifest;

namespace gptc {

namespace {

pb::DType dtypeOf(Type element) {
  if (element.isF32())
    return pb::F32;
  if (element.isBF16())
    return pb::BF16;
  if (element.isInteger(32))
    return pb::I32;
  if (isa<Float8E4M3FNType>(element))
    return pb::F8E4M3;
  if (isa<Float8E5M2Type>(element))
    return pb::F8E5M2;
  return pb::DTYPE_UNSPECIFIED;
}

pb::ArenaKind kindOf(rt::ArenaKind kind) {
  switch (kind) {
  case rt::ArenaKind::Activations:
    return pb::ACTIVATIONS;
  case rt::ArenaKind::Params:
    return pb::PARAMS;
  case rt::ArenaKind::Grads:
    return pb::GRADS;
  case rt::ArenaKind::Optimizer:
    return pb::OPTIMIZER;
  case rt::ArenaKind::Fp8State:
    return pb::FP8_STATE;
  case rt::ArenaKind::Inputs:
    return pb::INPUTS;
  case rt::ArenaKind::WeightCache:
    return pb::WEIGHT_CACHE;
  }
  return pb::ARENA_KIND_UNSPECIFIED;
}

void setShape(pb::Buffer *buffer, MemRefType type) {
  for (int64_t d : type.getShape())
    buffer->add_shape(d);
  buffer->set_dtype(dtypeOf(type.getElementType()));
}

class ManifestBuilder {
public:
  explicit ManifestBuilder(ModuleOp module) : module(module) {}

  FailureOr<std::string> build(const ManifestInputs &in) {
    pb::Manifest m;
    m.set_abi_version(GPTRT_ABI_VERSION);
    m.set_kernel_table_fingerprint(gptrt::kKernelTableFingerprint);
    m.set_micro_batch(in.microBatch);
    m.set_precision(in.precision);
    m.set_report(in.report);
    m.set_precision_table(in.precisionTable);
    if (const ModelSummary *s = in.summary) {
      pb::ModelConfig *config = m.mutable_model();
      config->set_name(s->model);
      for (auto &[key, value] : s->config) {
        if (key == "depth") config->set_depth(value);
        else if (key == "width") config->set_width(value);
        else if (key == "heads") config->set_heads(value);
        else if (key == "vocab") config->set_vocab(value);
        else if (key == "padded_vocab") config->set_padded_vocab(value);
        else if (key == "seq") config->set_seq(value);
      }
      m.set_flops_per_token(s->flopsPerToken());
      m.set_num_params(s->params);
    }
    for (auto arena : module.getOps<rt::ArenaOp>()) {
      arenaIndex[arena.getSymName()] = m.arenas_size();
      pb::Arena *a = m.add_arenas();
      a->set_name(arena.getSymName().str());
      a->set_kind(kindOf(arena.getKind()));
      a->set_size(arena.getSize());
      a->set_alignment(arena.getAlignment());
    }
    for (auto param : module.getOps<rt::ParamOp>())
      addParam(m.add_params(), param);
    for (auto func : module.getOps<func::FuncOp>()) {
      pb::Entry *entry = entryFor(m, func.getName());
      if (!entry) {
        func.emitOpError("is not an entry point the runtime knows (train_step, "
                         "eval_step, logits, optimizer_step, cast_weights)");
        return failure();
      }
      if (failed(addEntry(entry, func)))
        return failure();
      if (func.getName() == "optimizer_step")
        readOptimizer(m.mutable_optimizer(), func);
      if (func.getName() == "train_step") {
        m.set_seq(seqOf(m.train_step()));
        addGradBuckets(m, func);
      }
    }
    // The casts rt-cache-weight-casts moved keep their statistics slots.
    SmallVector<func::FuncOp> casting;
    for (StringRef name : {"train_step", "cast_weights"})
      if (auto func = module.lookupSymbol<func::FuncOp>(name))
        casting.push_back(func);
    if (failed(addFp8Stats(m, casting)))
      return failure();
    std::string bytes;
    if (!m.SerializeToString(&bytes)) {
      module.emitError("could not serialize the manifest");
      return failure();
    }
    return bytes;
  }

private:
  static pb::Entry *entryFor(pb::Manifest &m, StringRef name) {
    if (name == "train_step") return m.mutable_train_step();
    if (name == "eval_step") return m.mutable_eval_step();
    if (name == "logits") return m.mutable_logits();
    if (name == "optimizer_step") return m.mutable_optimizer_step();
    if (name == "cast_weights")
      return m.mutable_cast_weights();
    return nullptr;
  }

  static int64_t seqOf(const pb::Entry &entry) {
    for (const pb::NamedBuffer &input : entry.inputs())
      if (input.name() == "tokens" && input.buffer().shape_size() == 2)
        return input.buffer().shape(1);
    return 0;
  }

  void place(pb::Buffer *buffer, StringRef arena, int64_t offset,
             MemRefType type) {
    buffer->set_arena(arenaIndex.lookup(arena));
    buffer->set_offset(offset);
    setShape(buffer, type);
  }

  void addParam(pb::Param *p, rt::ParamOp param) {
    MemRefType type = param.getType();
    p->set_name(param.getSymName().str());
    p->set_layer(param.getLayer().str());
    for (int64_t d : type.getShape())
      p->add_shape(d);
    if (std::optional<StringRef> tied = param.getTiedTo()) {
      p->set_tied_to(tied->str());
      return;
    }
    StringRef init = *param.getInit();
    pb::Init *i = p->mutable_init();
    i->set_kind(init == "normal" ? pb::Init::NORMAL
                : init == "ones" ? pb::Init::ONES
                                 : pb::Init::ZEROS);
    if (std::optional<APFloat> std = param.getStd())
      i->set_std(std->convertToDouble());
    if (std::optional<uint64_t> rows = param.getRealRows())
      p->set_real_rows(*rows);
    p->set_weight_decay(param.getWeightDecay());
    place(p->mutable_value(), "params", *param.getValueOffset(), type);
    place(p->mutable_grad(), "grads", *param.getGradOffset(), type);
    place(p->mutable_adam_m(), "optimizer", *param.getAdamMOffset(), type);
    place(p->mutable_adam_v(), "optimizer", *param.getAdamVOffset(), type);
  }

  LogicalResult addEntry(pb::Entry *entry, func::FuncOp func) {
    entry->set_symbol(("gpt_" + func.getName()).str());
    for (auto bind : func.getOps<rt::BindOp>()) {
      Value buffer = bind.getBuffer();
      while (auto reshape = buffer.getDefiningOp<rt::ReshapeOp>())
        buffer = reshape.getSource();
      auto view = buffer.getDefiningOp<rt::ViewOp>();
      if (!view)
        return bind.emitOpError("binds a buffer that is not a view of an "
                                "arena; run rt-plan-memory first");
      pb::NamedBuffer *named = bind.getDirection() == rt::BindDirection::Input
                                   ? entry->add_inputs()
                                   : entry->add_outputs();
      named->set_name(bind.getName().str());
      place(named->mutable_buffer(), view.getArena(), view.getOffset(),
            bind.getBuffer().getType());
    }
    return success();
  }

  /// The FP8 casts rt-bufferize gave a statistics slot (`rt.fp8_stat`: a
  /// dictionary describing the kernel's FP8 output, or -- for a kernel
  /// that writes several casts, rt-fuse-dual-cast's -- an array with one
  /// per output, empty for an output without a slot), in slot order.
  static LogicalResult addFp8Stats(pb::Manifest &m,
                                   ArrayRef<func::FuncOp> funcs) {
    struct Described {
      int64_t slot;
      DictionaryAttr stat;
      Value output;
    };
    std::vector<Described> all;
    SmallVector<rt::KernelOp> kernels;
    for (func::FuncOp func : funcs)
      llvm::append_range(kernels, func.getOps<rt::KernelOp>());
    for (rt::KernelOp kernel : kernels) {
      Attribute attr = kernel->getAttr("rt.fp8_stat");
      if (!attr)
        continue;
      // A dictionary describes the kernel's FP8 output: a cast's only one,
      // the last one of a fused producer's _cast variant (its first is the
      // producer's own result).
      SmallVector<DictionaryAttr> stats;
      SmallVector<Value> described;
      if (auto one = dyn_cast<DictionaryAttr>(attr)) {
        stats.push_back(one);
        for (Value out : llvm::reverse(kernel.getOutputs()))
          if (isa<Float8E4M3FNType, Float8E5M2Type>(
                  cast<MemRefType>(out.getType()).getElementType())) {
            described.push_back(out);
            break;
          }
      } else if (auto many = dyn_cast<ArrayAttr>(attr)) {
        for (Attribute each : many)
          stats.push_back(dyn_cast<DictionaryAttr>(each));
        described.assign(kernel.getOutputs().begin(),
                         kernel.getOutputs().end());
      }
      auto malformed = [&] {
        return kernel.emitOpError(
            "has an rt.fp8_stat that is not {slot, layer, gemm, operand} (or "
            "an array of them, one per output) with slots numbered 0, 1, ... "
            "in order; run rt-bufferize to make it");
      };
      if (stats.size() > described.size() || kernel.getInputs().empty())
        return malformed();
      for (auto [i, stat] : llvm::enumerate(stats)) {
        if (!stat)
          return malformed();
        if (stat.empty())
          continue;
        auto slot = stat.getAs<IntegerAttr>("slot");
        if (!slot || !stat.getAs<StringAttr>("layer") ||
            !stat.getAs<StringAttr>("gemm") ||
            !stat.getAs<StringAttr>("operand"))
          return malformed();
        all.push_back({slot.getInt(), stat, described[i]});
      }
    }
    llvm::stable_sort(all, [](const Described &a, const Described &b) {
      return a.slot < b.slot;
    });
    for (const Described &d : all) {
      if (d.slot != m.fp8_stats_size())
        return func::FuncOp(funcs.front()).emitOpError()
               << "has FP8 statistics slots that are not 0, 1, ... (slot "
               << d.slot << " where " << m.fp8_stats_size()
               << " was expected); run rt-bufferize to number them";
      pb::Fp8Stat *s = m.add_fp8_stats();
      s->set_layer(d.stat.getAs<StringAttr>("layer").getValue().str());
      s->set_gemm(d.stat.getAs<StringAttr>("gemm").getValue().str());
      s->set_operand(d.stat.getAs<StringAttr>("operand").getValue().str());
      auto out = cast<MemRefType>(d.output.getType());
      s->set_format(dtypeOf(out.getElementType()));
      s->set_elements(out.getNumElements());
    }
    return success();
  }

  static void addGradBuckets(pb::Manifest &m, func::FuncOp func) {
    for (auto kernel : func.getOps<rt::KernelOp>()) {
      if (kernel.getKernel() != "grad_bucket_ready" || kernel.getOutputs().empty())
        continue;
      auto view = kernel.getOutputs()[0].getDefiningOp<rt::ViewOp>();
      ArrayRef<Attribute> c = kernel.getConsts().getValue();
      pb::GradBucket *bucket = m.add_grad_buckets();
      bucket->set_elements(cast<IntegerAttr>(c[0]).getInt());
      bucket->set_bucket(cast<IntegerAttr>(c[1]).getInt());
      bucket->set_offset(view ? static_cast<int64_t>(view.getOffset()) : -1);
    }
  }

  static void readOptimizer(pb::Optimizer *o, func::FuncOp func) {
    for (auto kernel : func.getOps<rt::KernelOp>()) {
      ArrayRef<Attribute> c = kernel.getConsts().getValue();
      auto real = [&](size_t i) { return cast<FloatAttr>(c[i]).getValueAsDouble(); };
      if (kernel.getKernel() == "clip_scale") {
        o->set_max_grad_norm(real(0));
      } else if (kernel.getKernel() == "adamw") {
        o->set_beta1(real(1));
        o->set_beta2(real(2));
        o->set_eps(real(3));
        o->set_weight_decay(std::max(o->weight_decay(), real(4)));
      } else if (kernel.getKernel() == "adamw_sharded") {
        o->set_beta1(real(3));
        o->set_beta2(real(4));
        o->set_eps(real(5));
        o->set_weight_decay(std::max(o->weight_decay(), real(6)));
        o->set_zero_stage(1);
      }
    }
  }

  ModuleOp module;
  llvm::StringMap<uint32_t> arenaIndex;
};

} // namespace

FailureOr<std::string> buildManifest(ModuleOp module,
                                     const ManifestInputs &inputs) {
  return ManifestBuilder(module).build(inputs);
}

} // namespace gptc
