// gptc's command line and phases (see GptcMain.h). Phases so far: parse and
// verify (gpt), gpt-autodiff (autodiff). Each later phase of DESIGN.md
// section 4 adds an --emit value.
#include "compiler/driver/GptcMain.h"

#include "compiler/driver/ModelSummary.h"
#include "compiler/driver/OutputFile.h"
#include "compiler/transforms/Passes.h"
#include "dialects/InitDialects.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

namespace gptc {

namespace {

/// Phases in pipeline order: emitting one runs every phase before it.
enum class EmitPhase { None, Gpt, Autodiff };

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "gptc") << message << "\n";
  return 1;
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
      llvm::cl::desc("Print parameters per layer, the total and FLOPs per "
                     "token to stdout"),
      llvm::cl::cat(category));
  llvm::cl::opt<EmitPhase> emit(
      "emit", llvm::cl::desc("Stop after a phase and write its IR to -o"),
      llvm::cl::init(EmitPhase::None),
      llvm::cl::values(
          clEnumValN(EmitPhase::Gpt, "gpt",
                     "the parsed and verified gpt dialect"),
          clEnumValN(EmitPhase::Autodiff, "autodiff",
                     "train_step, eval_step and logits (gpt-autodiff)")),
      llvm::cl::cat(category));
  llvm::cl::list<std::string> recompute(
      "recompute",
      llvm::cl::desc("Forward ops the backward computes again instead of "
                     "keeping their results (e.g. gelu,layernorm)"),
      llvm::cl::CommaSeparated, llvm::cl::cat(category));
  llvm::cl::opt<std::string> outputFile(
      "o", llvm::cl::desc("Output file ('-' for stdout)"),
      llvm::cl::value_desc("file"), llvm::cl::init("-"),
      llvm::cl::cat(category));
  llvm::cl::HideUnrelatedOptions(category);
  if (!llvm::cl::ParseCommandLineOptions(
          argc, argv,
          "gptc: compiles a GPT model written in the gpt dialect\n\n"
          "  gptc models/gpt2.mlir --report\n"
          "  gptc models/gpt2.mlir --emit=gpt -o checked.mlir\n",
          &llvm::errs()))
    return 1;

  if (!report && emit == EmitPhase::None)
    return fail("nothing to do: pass --report and/or --emit=gpt|autodiff "
                "(code generation to a .so is not part of gptc yet)");

  DialectRegistry registry;
  registerGptcDialects(registry);
  MLIRContext context(registry);

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

  if (report) {
    FailureOr<ModelSummary> summary = summarizeModel(*module);
    if (failed(summary))
      return 1;
    printReport(*summary, llvm::outs());
  }
  if (emit >= EmitPhase::Autodiff) {
    PassManager pm(&context);
    GptAutodiffOptions autodiff;
    autodiff.recompute.assign(recompute.begin(), recompute.end());
    pm.addPass(createGptAutodiff(autodiff));
    if (failed(pm.run(*module)))
      return 1;
  }
  if (emit != EmitPhase::None) {
    if (llvm::Error err = writeFileAtomically(
            outputFile, [&](llvm::raw_ostream &os) { module->print(os); os << "\n"; }))
      return fail(llvm::toString(std::move(err)));
  }
  return 0;
}

} // namespace gptc
