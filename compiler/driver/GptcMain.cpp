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
#include "compiler/pipelines/TrainPipeline.h"
#include "compiler/precision/PluginLoader.h"
#include "compiler/precision/PolicyRegistry.h"
#include "compiler/target/Manifest.h"
#include "compiler/target/ObjectFile.h"
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "dialects/InitDialects.h"
#include "runtime/abi/GemmForm.h"

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

/// A call's name in the report: its kernel, and for a GEMM its form as the
/// runtime's profile names it ("gemm.bf16+bias+gelu").
std::string callName(rt::KernelOp op) {
  if (op.getKernel() != "gemm")
    return op.getKernel().str();
  auto field = [&](StringRef name) {
    return *rt::descriptorField(op, "gemm_desc", name);
  };
  gptrt::GemmForm form;
  form.operands = gptrt::gemmOperands(field("a_dtype"), field("a_scaling"),
                                      field("b_scaling"));
  form.bias = bool(rt::bufferNamed(op, "bias"));
  form.gelu = bool(rt::bufferNamed(op, "gelu_pre"));
  form.dgelu = bool(rt::bufferNamed(op, "dgelu_pre"));
  form.dbias = bool(rt::bufferNamed(op, "dbias"));
  form.accumulate = field("c_dtype") == GPTRT_DTYPE_F32_ACCUMULATE;
  return "gemm." + form.name();
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
          !isa<rt::ViewOp, rt::AllocOp, rt::ReshapeOp, rt::BindOp, rt::NullOp>(
              op))
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
  train.walk([&](rt::KernelOp op) { ++byKernel[callName(op)]; });
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
  // The pipeline's options, as flags of the same names (one list:
  // compiler/pipelines/TrainPipelineOptions.def).
#define GPT_PIPELINE_OPTION(type, field, name, initial, description)           \
  llvm::cl::opt<type> field(name, llvm::cl::desc(description),                 \
                            llvm::cl::init(initial), llvm::cl::cat(category));
#define GPT_PIPELINE_LIST_OPTION(type, field, name, description)               \
  llvm::cl::list<type> field(name, llvm::cl::desc(description),                \
                             llvm::cl::CommaSeparated,                         \
                             llvm::cl::cat(category));
#include "compiler/pipelines/TrainPipelineOptions.def"
  llvm::cl::list<std::string> passPlugins(
      "load-pass-plugin",
      llvm::cl::desc("A precision-policy plugin (.so) whose policies "
                     "--precision may name; repeatable"),
      llvm::cl::value_desc("LIB.so"), llvm::cl::cat(category));
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
  TrainPipelineOptions pipeline;
#define GPT_PIPELINE_OPTION(type, field, name, initial, description)           \
  pipeline.field = field;
#define GPT_PIPELINE_LIST_OPTION(type, field, name, description)               \
  pipeline.field = llvm::ArrayRef<type>(field);
#include "compiler/pipelines/TrainPipelineOptions.def"
  pipeline.microBatch = batch;
  // gpt-train-pipeline in pieces: the precision table is read between
  // them, and --emit=fp8 skips the storage passes (they wait for
  // bufferization). The pieces run the passes gpt-opt's
  // gpt-train-pipeline runs at once, in the same order.
  auto runStages = [&](unsigned stages) {
    PassManager pm(&context);
    buildTrainPipeline(pm, pipeline, stages);
    return pm.run(work);
  };
  auto stage = [](TrainStage s) { return static_cast<unsigned>(s); };
  if (runTo >= Phase::Autodiff &&
      failed(runStages(stage(TrainStage::Autodiff))))
    return 1;
  if (runTo >= Phase::Fp8) {
    if (failed(runStages(stage(TrainStage::Precision))))
      return 1;
    // Read before bufferization, while the GEMMs are still gpt/fp8 ops.
    llvm::raw_string_ostream tableStream(precisionTable);
    printPrecisionTable(work, precision, tableStream);
    unsigned rest = stage(TrainStage::Fp8Layout);
    if (runTo >= Phase::Rt)
      rest |= stage(TrainStage::Storage) | stage(TrainStage::Rt);
    if (failed(runStages(rest)))
      return 1;
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
