// gptc's command line and phases (see GptcMain.h): parse and verify (gpt),
// gpt-specialize + gpt-autodiff + gpt-optimizer (autodiff), fp8-precision
// with the --precision policy, built in or from --load-pass-plugin, and
// gpt-precision (fp8), rt-bufferize +
// rt-plan-memory (rt), rt-to-llvm and translation (llvm), object code (obj)
// and the shared object with its manifest (so).
#include "compiler/driver/GptcMain.h"

#include "compiler/driver/ModelSummary.h"
#include "compiler/driver/OutputFile.h"
#include "compiler/driver/PrecisionTable.h"
#include "compiler/precision/PluginLoader.h"
#include "compiler/precision/PolicyRegistry.h"
#include "compiler/target/Manifest.h"
#include "compiler/target/ObjectFile.h"
#include "compiler/transforms/Passes.h"
#include "dialects/InitDialects.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <vector>

using namespace mlir;

namespace gptc {

namespace {

/// Phases in pipeline order: emitting one runs every phase before it.
enum class Phase { None, Gpt, Autodiff, Fp8, Rt, Llvm, Obj, So };

/// --report's data-parallel line: the gradient buckets train_step sums
/// itself (gpt-data-parallel, counted after rt-bufferize).
void printGradientBuckets(ModuleOp module, llvm::raw_ostream &os) {
  int64_t buckets = 0, floats = 0, largest = 0;
  bool fp8 = false, scatter = false;
  module.walk([&](rt::KernelOp kernel) {
    if (kernel.getKernel() != "grad_bucket_ready")
      return;
    int64_t n = cast<IntegerAttr>(kernel.getConsts()[0]).getInt();
    fp8 = cast<IntegerAttr>(kernel.getConsts()[2]).getInt() >= 0;
    scatter = cast<IntegerAttr>(kernel.getConsts()[3]).getInt() != 0;
    ++buckets;
    floats += n;
    largest = std::max(largest, n);
  });
  if (buckets == 0) {
    os << "data parallel: no gradient buckets (--grad-bucket-mb=0): the "
          "runtime sums the whole gradient arena after each step\n";
    return;
  }
  const double mib = 4.0 / (1024 * 1024);
  os << "data parallel: " << buckets << " gradient buckets (largest "
     << llvm::format("%.1f", largest * mib) << " MiB), "
     << llvm::format("%.1f", floats * mib)
     << " MiB of f32 gradients summed across ranks per optimizer step, sent "
     << (fp8 ? std::string("as E4M3 (") +
                   llvm::formatv("{0:f1}", floats * mib / 4).str() +
                   " MiB of codes: each slice's to its owner, which sums "
                   "them in f32" +
                   (scatter ? "" : ", then the sums back to every rank") +
                   "; a quarter of the f32 bytes at any number of ranks)"
             : std::string("as f32"))
     << ", each bucket as soon as the backward has finished it\n";
  if (scatter)
    os << "ZeRO-1: each bucket is reduce-scattered (a rank receives the sums "
          "of its 1/ranks slice), AdamW runs on those slices with moments for "
          "them only ("
       << llvm::format("%.1f", 2 * floats * mib)
       << " MiB / ranks per rank instead of all of it), then the parameters "
          "are all-gathered ("
       << llvm::format("%.1f", floats * mib) << " MiB)\n";
}

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptc") << message << "\n";
  return 1;
}

std::string mebibytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

/// Peak activation memory and total arena memory after rt-plan-memory.
void printMemory(ModuleOp module, StringRef precision, int64_t microBatch,
                 int64_t seq, llvm::raw_ostream &os) {
  int64_t total = 0, activations = 0;
  for (auto arena : module.getOps<rt::ArenaOp>()) {
    total += arena.getSize();
    if (arena.getKind() == rt::ArenaKind::Activations)
      activations = arena.getSize();
  }
  os << "memory (" << precision << ", micro-batch " << microBatch << " x "
     << seq << "): peak activations " << mebibytes(activations) << ", total "
     << mebibytes(total) << " (every arena, below)\n";
  for (auto arena : module.getOps<rt::ArenaOp>())
    os << "  " << llvm::left_justify(arena.getSymName(), 12)
       << llvm::right_justify(mebibytes(arena.getSize()), 14) << "\n";
}

/// How many runtime calls (kernels and collectives) each entry point makes
/// and how often it runs: the number fusion passes and options move, and
/// on a GPU roughly the launches of a step.
void printRuntimeCalls(ModuleOp module, llvm::raw_ostream &os) {
  static const std::pair<StringRef, StringRef> entries[] = {
      {"train_step", "each micro-step"},
      {"cast_weights", "once per optimizer step, when the parameters changed"},
      {"optimizer_step", "once per optimizer step"},
      {"eval_step", "per evaluation batch"},
      {"logits", "per sampled token"}};
  os << "runtime calls per entry point:";
  const char *separator = " ";
  for (auto [name, when] : entries) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func || func.isExternal())
      continue;
    int64_t calls = 0;
    func.walk([&](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "rt" &&
          !isa<rt::ViewOp, rt::AllocOp, rt::ReshapeOp, rt::BindOp>(op))
        ++calls;
    });
    os << separator << name << " " << calls << " (" << when << ")";
    separator = ", ";
  }
  os << "\n";
  // Which kernels a micro-step calls, most frequent first: what the
  // fusion passes and precision options change.
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train || train.isExternal())
    return;
  llvm::StringMap<int64_t> byKernel;
  train.walk([&](rt::KernelOp op) { ++byKernel[op.getKernel()]; });
  std::vector<std::pair<StringRef, int64_t>> sorted;
  for (const auto &entry : byKernel)
    sorted.push_back({entry.getKey(), entry.getValue()});
  llvm::sort(sorted, [](const auto &a, const auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  os << "train_step kernels:";
  separator = " ";
  for (auto [kernel, count] : sorted) {
    os << separator << kernel << " " << count;
    separator = ", ";
  }
  os << "\n";
}

} // namespace

int gptcMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::OptionCategory category("gptc options");
  llvm::cl::opt<std::string> inputFile(
      llvm::cl::Positional, llvm::cl::desc("<model.mlir>"), llvm::cl::Required,
      llvm::cl::cat(category));
  llvm::cl::opt<bool> report(
      "report",
      llvm::cl::desc("Print parameters per layer, the total, FLOPs per token "
                     "and memory for the micro-batch to stdout"),
      llvm::cl::cat(category));
  llvm::cl::opt<Phase> emit(
      "emit", llvm::cl::desc("Stop after a phase and write its output to -o"),
      llvm::cl::init(Phase::None),
      llvm::cl::values(
          clEnumValN(Phase::Gpt, "gpt", "the parsed and verified gpt dialect"),
          clEnumValN(Phase::Autodiff, "autodiff",
                     "train_step, eval_step, logits and optimizer_step"),
          clEnumValN(Phase::Fp8, "fp8",
                     "after the precision passes (FP8 GEMMs, bf16 casts)"),
          clEnumValN(Phase::Rt, "rt", "buffers, kernel calls, memory plan"),
          clEnumValN(Phase::Llvm, "llvm", "LLVM IR of the entry points"),
          clEnumValN(Phase::Obj, "obj", "an object file"),
          clEnumValN(Phase::So, "so", "the shared object (the default)")),
      llvm::cl::cat(category));
  llvm::cl::opt<int64_t> microBatch(
      "micro-batch",
      llvm::cl::desc("Sequences per micro-step (default: the model's "
                     "gpt.config micro_batch, else 4)"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> seqLength(
      "seq",
      llvm::cl::desc("Tokens per sequence, at most the model's context length "
                     "(default: the model's)"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<std::string> precision(
      "precision",
      llvm::cl::desc("bf16 (default: bf16 storage of activations and GEMM "
                     "inputs, f32 compute and master weights), fp8-tensorwise "
                     "(GEMMs in FP8 with per-tensor current scaling, the rest "
                     "as bf16), fp8-delayed (scales from an amax history), "
                     "fp8-rowwise (a power-of-two scale per row), "
                     "fp32 (parity tests) or a policy from --load-pass-plugin"),
      llvm::cl::init("bf16"), llvm::cl::cat(category));
  llvm::cl::list<std::string> fp8Exclude(
      "fp8-exclude",
      llvm::cl::desc("Layers kept out of FP8: names or globs ('*', '?') "
                     "(e.g. lm_head,h.0.*)"),
      llvm::cl::CommaSeparated, llvm::cl::cat(category));
  llvm::cl::list<std::string> fp8Include(
      "fp8-include",
      llvm::cl::desc("Only these layers may go FP8: names or globs, as "
                     "--fp8-exclude (e.g. h.*.mlp.*); --fp8-exclude still "
                     "applies"),
      llvm::cl::CommaSeparated, llvm::cl::cat(category));
  llvm::cl::opt<int64_t> fp8MinMnk(
      "fp8-min-mnk",
      llvm::cl::desc("GEMMs with M*N*K below this stay bf16 (too small to "
                     "gain); 0 (default) keeps all. On an H200 start from "
                     "6000000000 (see gpt-opt --help, fp8-precision)"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> fp8History(
      "fp8-history",
      llvm::cl::desc("fp8-delayed: amaxes kept per tensor (default 16)"),
      llvm::cl::init(16), llvm::cl::cat(category));
  llvm::cl::opt<std::string> fp8AmaxReduction(
      "fp8-amax-reduction",
      llvm::cl::desc("fp8-delayed: max (default) or most_recent of the "
                     "history"),
      llvm::cl::init("max"), llvm::cl::cat(category));
  llvm::cl::opt<int64_t> fp8Margin(
      "fp8-margin",
      llvm::cl::desc("Divide FP8 scales by 2^margin for headroom above the "
                     "amax (default 0)"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<std::string> fp8WeightScaling(
      "fp8-weight-scaling",
      llvm::cl::desc("fp8-delayed: policy (default: weights keep an amax "
                     "history too, so they are cast every micro-step) or "
                     "current (each weight scaled from its own amax and cast "
                     "once per optimizer step; activations and gradients "
                     "keep their histories)"),
      llvm::cl::init("policy"), llvm::cl::cat(category));
  llvm::cl::opt<bool> fp8FastAccum(
      "fp8-fast-accum",
      llvm::cl::desc("Forward FP8 GEMMs accumulate as Hopper's tensor cores "
                     "do natively, without periodic promotion to f32 "
                     "(default true, as TransformerEngine and torchao); the "
                     "backward's always accumulate precisely. =false: "
                     "precise everywhere"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<std::string> gradComm(
      "grad-comm",
      llvm::cl::desc("Data parallelism: gradients travel as f32 (default, "
                     "exact sums) or fp8 (E4M3 with a scale shared by all "
                     "ranks, a quarter of the bytes: each slice's owner sums "
                     "it in f32 and sends the sums back as E4M3)"),
      llvm::cl::init("f32"), llvm::cl::cat(category));
  llvm::cl::opt<double> gradBucketMb(
      "grad-bucket-mb",
      llvm::cl::desc("Data parallelism: gradients are summed across ranks in "
                     "buckets of at most this many MiB, each as soon as the "
                     "backward finishes it (default 25); 0: the runtime sums "
                     "all gradients after the step"),
      llvm::cl::init(25.0), llvm::cl::cat(category));
  llvm::cl::opt<int> zeroStage(
      "zero",
      llvm::cl::desc("Data parallelism: 0 (default) all-reduces gradients; 1 "
                     "is ZeRO-1: reduce-scatter, AdamW and its moments sharded "
                     "across ranks, parameters all-gathered"),
      llvm::cl::init(0), llvm::cl::cat(category));
  llvm::cl::opt<bool> fp8Fusion(
      "fp8-fusion",
      llvm::cl::desc("Compute each amax, and under fp8-delayed each FP8 cast, "
                     "in the kernel that produces its tensor (fp8-fuse-amax, "
                     "fp8-fuse-cast, rt-fuse-amax; default true). =false "
                     "keeps separate "
                     "kernels, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fp8TransposeCasts(
      "fp8-transpose-casts",
      llvm::cl::desc("Write each FP8 cast that a backward GEMM reads in the "
                     "other layout transposed, so the GEMM's operands are "
                     "K-contiguous as Hopper needs (fp8-transpose-casts; "
                     "default true). =false leaves the transposes to the "
                     "runtime, one extra pass each, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fp8ReuseScales(
      "fp8-reuse-scales",
      llvm::cl::desc("Compute the amax and scale of a tensor that several "
                     "FP8 GEMMs read once (fp8-reuse-scales; default true). "
                     "=false computes them per GEMM, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> gemmEpilogues(
      "gemm-epilogues",
      llvm::cl::desc("Fold the GELU after a bf16 GEMM, and its gradient "
                     "after the backward GEMM, into the GEMM "
                     "(rt-fuse-gemm-epilogue; default true): on a GPU "
                     "cuBLASLt's GELU epilogues, on the CPU the same "
                     "numbers. =false keeps separate GELU kernels"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseAddLayerNorm(
      "fuse-add-layernorm",
      llvm::cl::desc("Fuse each residual add into the layernorm that reads "
                     "its sum, and each layernorm backward into the add of "
                     "its dx into the residual gradient "
                     "(rt-fuse-add-layernorm; default true): one pass over "
                     "the rows on a GPU, the same numbers everywhere. "
                     "=false keeps separate kernels"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseClassifier(
      "fuse-classifier",
      llvm::cl::desc("Compute the loss and the logits' gradient in one "
                     "kernel (rt-fuse-classifier; default true): on a GPU "
                     "the logits are read once, not twice; the same numbers "
                     "on the CPU. =false keeps cross_entropy_fwd and _bwd"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseQkvAttention(
      "fuse-qkv-attention",
      llvm::cl::desc("Let attention read q, k, v (and write their gradients) "
                     "packed in the qkv GEMM's buffer instead of three split "
                     "and three concat copies per layer "
                     "(rt-fuse-qkv-attention; default true). =false keeps "
                     "the copies, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseDualCasts(
      "fuse-dual-casts",
      llvm::cl::desc("Make the row-major and the transposed FP8 copy of "
                     "each output gradient -- and, under fp8-delayed, of "
                     "each weight and of GELU's output and gradient, "
                     "which are then never stored in bf16 -- in one read "
                     "(rt-fuse-dual-cast, rt-fuse-delayed-dual-cast, "
                     "rt-fuse-producer-dual-cast; default true). =false "
                     "keeps two casts, with the same codes"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseCastScales(
      "fuse-cast-scales",
      llvm::cl::desc("Let FP8 casts work out their scale from the amax "
                     "(current scaling) or the amax history (delayed) "
                     "themselves instead of separate scale_from_amax / "
                     "fp8_state_scale kernels (rt-fuse-cast-scale; default "
                     "true): one launch fewer per such operand on a GPU; "
                     "under fp8-rowwise a cast along rows makes its "
                     "amaxes, scales and codes in one kernel "
                     "(rt-fuse-rowwise-cast). =false keeps the scale "
                     "kernels, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> batchFp8StateUpdates(
      "batch-fp8-state-updates",
      llvm::cl::desc("Update fp8-delayed's amax histories at the end of "
                     "each step, one kernel per 64 states, instead of one "
                     "kernel per FP8 tensor after its producer "
                     "(rt-batch-fp8-state-updates; default true): the "
                     "amaxes are kept in the fp8_state arena until then. "
                     "=false keeps the separate updates, with the same "
                     "numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> hoistTransposedCasts(
      "hoist-transposed-casts",
      llvm::cl::desc("Make each transposed FP8 cast that is the last reader "
                     "of its tensor right after the tensor's producer "
                     "(rt-hoist-transposed-casts; default true): under "
                     "fp8-delayed a layernorm's or GELU's output then dies "
                     "in the forward and its transposed FP8 copy, half the "
                     "bytes, is kept for the backward. =false keeps the "
                     "casts where the backward needs them, with the same "
                     "numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> batchFp8StateScales(
      "batch-fp8-state-scales",
      llvm::cl::desc("Make fp8-delayed's scales at the start of each step, "
                     "one kernel per 64 states, instead of one kernel in "
                     "front of each producer that casts to FP8 "
                     "(rt-batch-fp8-state-scales; default true): the "
                     "scales are kept in the fp8_state arena. =false keeps "
                     "the separate scale kernels, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> batchAdamw(
      "batch-adamw",
      llvm::cl::desc("Update parameters that lie one after another with "
                     "one adamw_multi kernel, weight decay given per range "
                     "of elements, instead of one adamw kernel per "
                     "parameter (rt-batch-adamw; default true). =false "
                     "keeps one kernel per parameter, with the same "
                     "numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> fuseGradAccumulation(
      "fuse-grad-accumulation",
      llvm::cl::desc("Let each weight-gradient GEMM add its f32 result into "
                     "the parameter's f32 gradient (rt-fuse-grad-"
                     "accumulation; default true): no bf16 rounding of each "
                     "micro-step's product, no temporary, one pass. "
                     "=false stores the product (bf16 under the bf16 and "
                     "FP8 precisions) and accumulates it in a separate "
                     "kernel"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> cacheWeightCasts(
      "cache-weight-casts",
      llvm::cl::desc("Make the parameters' bf16 and FP8 copies in a "
                     "cast_weights entry that the runtime runs once per "
                     "optimizer step, not in every micro-step's train_step "
                     "(rt-cache-weight-casts; default true): the copies "
                     "persist in a weight_cache arena. =false casts them in "
                     "each train_step, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> bf16Gemm(
      "bf16-gemm",
      llvm::cl::desc("GEMMs whose operands are stored in bf16 read them "
                     "directly (gpt-bf16-gemm; default true). =false widens "
                     "them to f32 first, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::opt<bool> bf16Kernels(
      "bf16-kernels",
      llvm::cl::desc("Residual adds, GELU, layernorm, attention, the qkv "
                     "split, bias gradients and gradient accumulation read "
                     "and write bf16 storage directly (gpt-bf16-kernels; "
                     "default true). =false widens and narrows through f32 "
                     "copies, with the same numbers"),
      llvm::cl::init(true), llvm::cl::cat(category));
  llvm::cl::list<std::string> passPlugins(
      "load-pass-plugin",
      llvm::cl::desc("A precision-policy plugin (.so) whose policies "
                     "--precision may name; repeatable"),
      llvm::cl::value_desc("LIB.so"), llvm::cl::cat(category));
  llvm::cl::list<std::string> recompute(
      "recompute",
      llvm::cl::desc("Forward ops the backward computes again instead of "
                     "keeping their results (e.g. gelu,layernorm)"),
      llvm::cl::CommaSeparated, llvm::cl::cat(category));
  llvm::cl::opt<std::string> outputFile(
      "o", llvm::cl::desc("Output file ('-' for stdout; .so for the artifact)"),
      llvm::cl::value_desc("file"), llvm::cl::init(""),
      llvm::cl::cat(category));
  llvm::cl::HideUnrelatedOptions(category);
  if (!llvm::cl::ParseCommandLineOptions(
          argc, argv,
          "gptc: compiles a GPT model written in the gpt dialect\n\n"
          "  gptc models/gpt2-tiny.mlir -o tiny.so\n"
          "  gptc models/gpt2.mlir --report --micro-batch 64\n"
          "  gptc models/gpt2.mlir --emit=autodiff -o step.mlir\n",
          &llvm::errs()))
    return 1;

  Phase phase = emit;
  if (phase == Phase::None && !outputFile.empty())
    phase = Phase::So;
  if (!report && phase == Phase::None)
    return fail("nothing to do: pass -o FILE.so to compile, --report, or "
                "--emit=gpt|autodiff|fp8|rt|llvm|obj|so with -o");
  if (phase >= Phase::Obj && (outputFile.empty() || outputFile == "-"))
    return fail("--emit=obj and --emit=so write a file: pass -o FILE");
  if (phase != Phase::None && outputFile.empty())
    outputFile = "-";
  PolicyRegistry &policies = PolicyRegistry::global();
  for (const std::string &plugin : passPlugins)
    if (llvm::Error err = loadPrecisionPlugin(plugin, policies))
      return fail(llvm::toString(std::move(err)));
  if (precision != "fp32" && !policies.lookup(precision))
    return fail("--precision=" + precision +
                " is not available in this gptc: use " +
                policies.listNames({"fp32"}) +
                (passPlugins.empty()
                     ? "; a plugin's policy needs --load-pass-plugin=LIB.so"
                     : ""));
  // Checked here too, so a typo is one line naming the flag rather than a
  // pass error pointing into the model.
  for (auto [flag, patterns] :
       {std::pair{"--fp8-exclude", &fp8Exclude},
        std::pair{"--fp8-include", &fp8Include}})
    for (const std::string &pattern : *patterns)
      if (llvm::Expected<llvm::GlobPattern> glob =
              llvm::GlobPattern::create(pattern);
          !glob)
        return fail(llvm::Twine(flag) + "=" + pattern +
                    " is not a valid glob (" +
                    llvm::toString(glob.takeError()) +
                    "): use layer names with '*' and '?', e.g. h.*.mlp.fc");
  if (fp8MinMnk < 0)
    return fail("--fp8-min-mnk=" + std::to_string(fp8MinMnk) +
                " must be >= 0 (0 keeps every eligible GEMM in FP8)");

  DialectRegistry registry;
  registerGptcDialects(registry);
  MLIRContext context(registry);
  // One located line per problem; the op dump MLIR appends is for compiler
  // developers (gpt-opt shows it).
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFile, &errorMessage);
  if (!input)
    return fail("cannot read the model '" + inputFile + "': " + errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Parsing verifies the module; every error arrives as a located diagnostic.
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 1;

  FailureOr<ModelSummary> summary = failure();
  if (report || phase >= Phase::So) {
    summary = summarizeModel(*module);
    if (failed(summary))
      return 1;
  }
  std::string reportText;
  llvm::raw_string_ostream reportStream(reportText);
  if (succeeded(summary))
    printReport(*summary, reportStream);

  if (seqLength.getNumOccurrences() && seqLength <= 0)
    return fail("--seq " + std::to_string(seqLength) +
                " must be positive (tokens per sequence)");
  if (microBatch.getNumOccurrences() && microBatch <= 0)
    return fail("--micro-batch " + std::to_string(microBatch) +
                " must be positive (sequences per micro-step)");
  int64_t batch = microBatch;
  if (batch <= 0) {
    batch = 4;
    if (auto config = (*module)->getAttrOfType<DictionaryAttr>("gpt.config"))
      if (auto b = config.getAs<IntegerAttr>("micro_batch"))
        batch = b.getInt();
  }

  std::string precisionTable;
  // A report without --emit still plans memory, on the side.
  Phase runTo = std::max(phase, report ? Phase::Rt : Phase::None);
  OwningOpRef<ModuleOp> planned;
  ModuleOp work = *module;
  if (phase == Phase::None) {
    planned = module->clone();
    work = *planned;
  }
  if (runTo >= Phase::Autodiff) {
    PassManager pm(&context);
    GptSpecializeOptions specialize;
    specialize.microBatch = batch;
    specialize.seq = seqLength;
    pm.addPass(createGptSpecialize(specialize));
    GptAutodiffOptions autodiff;
    autodiff.recompute.assign(recompute.begin(), recompute.end());
    pm.addPass(createGptAutodiff(autodiff));
    pm.addPass(createGptOptimizer());
    GptDataParallelOptions dataParallel;
    dataParallel.bucketMb = gradBucketMb;
    dataParallel.gradComm = gradComm;
    dataParallel.zero = zeroStage;
    pm.addPass(createGptDataParallel(dataParallel));
    if (failed(pm.run(work)))
      return 1;
  }
  if (runTo >= Phase::Fp8) {
    PassManager pm(&context);
    // Every policy goes through fp8-precision; bf16's leaves the IR as is.
    if (precision != "fp32") {
      Fp8PrecisionOptions fp8;
      fp8.policy = precision;
      fp8.exclude.assign(fp8Exclude.begin(), fp8Exclude.end());
      fp8.include.assign(fp8Include.begin(), fp8Include.end());
      fp8.minMnk = fp8MinMnk;
      fp8.historyLength = fp8History;
      fp8.amaxReduction = fp8AmaxReduction;
      fp8.margin = fp8Margin;
      fp8.weightScaling = fp8WeightScaling;
      fp8.fastAccum = fp8FastAccum;
      pm.addPass(createFp8Precision(fp8));
    }
    GptPrecisionOptions storage;
    storage.precision = precision == "fp32" ? "fp32" : "bf16";
    pm.addPass(createGptPrecision(storage));
    if (failed(pm.run(work)))
      return 1;
    // Read before bufferization, while the GEMMs are still gpt/fp8 ops.
    llvm::raw_string_ostream tableStream(precisionTable);
    printPrecisionTable(work, precision, tableStream);
    // The storage passes before the FP8 fusions: once a producer writes its
    // bf16 result itself, fp8-fuse-amax / fp8-fuse-cast fold the amax and
    // cast into that producer (layernorm_fwd_amax, ...) rather than into a
    // separate f32 -> bf16 convert that would then stay.
    if (runTo >= Phase::Rt) {
      PassManager storagePasses(&context);
      if (bf16Gemm)
        storagePasses.addPass(createGptBf16Gemm());
      if (bf16Kernels)
        storagePasses.addPass(createGptBf16Kernels());
      if (failed(storagePasses.run(work)))
        return 1;
    }
    PassManager fp8Layout(&context);
    if (fp8Fusion) {
      fp8Layout.addPass(createFp8FuseAmax());
      fp8Layout.addPass(createFp8FuseCast());
    }
    if (fp8TransposeCasts)
      fp8Layout.addPass(createFp8TransposeCasts());
    if (fp8ReuseScales)
      fp8Layout.addPass(createFp8ReuseScales());
    if (failed(fp8Layout.run(work)))
      return 1;
    if (runTo >= Phase::Rt) {
      PassManager lower(&context);
      lower.addPass(createRtBufferize());
      if (gemmEpilogues)
        lower.addPass(createRtFuseGemmEpilogue());
      if (fuseAddLayerNorm)
        lower.addPass(createRtFuseAddLayerNorm());
      if (fuseQkvAttention)
        lower.addPass(createRtFuseQkvAttention());
      if (fuseClassifier)
        lower.addPass(createRtFuseClassifier());
      if (fuseDualCasts)
        lower.addPass(createRtFuseDualCast());
      if (fp8Fusion) {
        lower.addPass(createRtFuseAmax());
        lower.addPass(createRtFuseProducerCast());
      }
      if (fuseGradAccumulation)
        lower.addPass(createRtFuseGradAccumulation());
      if (cacheWeightCasts)
        lower.addPass(createRtCacheWeightCasts());
      if (fuseCastScales) {
        lower.addPass(createRtFuseCastScale());
        lower.addPass(createRtFuseRowwiseCast());
      }
      if (batchFp8StateUpdates)
        lower.addPass(createRtBatchFp8StateUpdates());
      if (fuseDualCasts)
        lower.addPass(createRtFuseDelayedDualCast());
      if (hoistTransposedCasts)
        lower.addPass(createRtHoistTransposedCasts());
      if (fuseDualCasts)
        lower.addPass(createRtFuseProducerDualCast());
      if (batchFp8StateScales)
        lower.addPass(createRtBatchFp8StateScales());
      if (batchAdamw)
        lower.addPass(createRtBatchAdamw());
      lower.addPass(createRtPlanMemory());
      if (failed(lower.run(work)))
        return 1;
    }
  }
  if (report && runTo >= Phase::Rt) {
    int64_t seq = seqLength;
    if (auto config = (*module)->getAttrOfType<DictionaryAttr>("gpt.config"))
      if (auto t = config.getAs<IntegerAttr>("seq"); t && !seq)
        seq = t.getInt();
    printMemory(work, precision, batch, seq, reportStream);
    printGradientBuckets(work, reportStream);
    printRuntimeCalls(work, reportStream);
  }
  if (report)
    llvm::outs() << reportText << precisionTable;

  if (phase >= Phase::Llvm) {
    ManifestInputs inputs{succeeded(summary) ? &*summary : nullptr, batch,
                          precision, reportText, precisionTable};
    FailureOr<std::string> manifest = buildManifest(work, inputs);
    if (failed(manifest))
      return 1;
    work->setAttr("rt.manifest", StringAttr::get(&context, *manifest));
    PassManager pm(&context);
    pm.addPass(createRtToLLVM());
    if (failed(pm.run(work)))
      return 1;
  }

  if (phase >= Phase::Gpt && phase <= Phase::Rt) {
    if (llvm::Error err = writeFileAtomically(
            outputFile, [&](llvm::raw_ostream &os) { work->print(os); os << "\n"; }))
      return fail(llvm::toString(std::move(err)));
    return 0;
  }
  if (phase < Phase::Llvm)
    return 0;

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateToLLVMIR(work, llvmContext);
  if (!llvmModule)
    return fail("translation of the lowered module to LLVM IR failed");
  if (phase == Phase::Llvm) {
    if (llvm::Error err = writeFileAtomically(
            outputFile, [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); }))
      return fail(llvm::toString(std::move(err)));
    return 0;
  }
  std::string objectPath =
      phase == Phase::Obj ? outputFile.getValue() : outputFile + ".o";
  llvm::SmallString<256> tmpObject;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          objectPath + ".tmp-%%%%%%", tmpObject))
    return fail("cannot create a file next to '" + objectPath + "': " +
                ec.message());
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove(tmpObject); });
  if (llvm::Error err = writeObjectFile(*llvmModule, tmpObject))
    return fail(llvm::toString(std::move(err)));
  if (phase == Phase::Obj) {
    if (std::error_code ec = llvm::sys::fs::rename(tmpObject, objectPath))
      return fail("cannot write '" + objectPath + "': " + ec.message());
    return 0;
  }
  if (llvm::Error err = linkSharedObject(tmpObject, outputFile))
    return fail(llvm::toString(std::move(err)));
  return 0;
}

} // namespace gptc
