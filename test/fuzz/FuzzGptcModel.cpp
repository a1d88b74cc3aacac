// libFuzzer target: gptc's front end on arbitrary model text -- parse (which
// verifies every op, the gpt dialect's bounds and gpt.config against the
// graph), the model summary gptc --report prints, and the registered
// gpt-train-pipeline down to planned rt.kernel calls, as `gptc --emit=rt`
// runs them. Seeded from the lit inputs and the checked-in models. Bad
// input must end in a located diagnostic: never a crash or a sanitizer
// report in gptc's own code.
#include "compiler/driver/ModelSummary.h"
#include "compiler/pipelines/TrainPipeline.h"
#include "dialects/InitDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

using namespace mlir;

namespace {
// Models are small text; longer inputs only slow the search down.
constexpr size_t kMaxInput = 1 << 16;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInput)
    return 0;
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    gptc::registerGptcDialects(*r);
    return r;
  }();
  MLIRContext context(*registry);
  context.disableMultithreading();
  // Diagnostics are the expected outcome for bad input: swallowed.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  // MLIR's lexer reads up to the terminating NUL, as the files gptc reads
  // (llvm::MemoryBuffer) have; libFuzzer's buffer has none.
  const std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module)
    return 0;
  // Only models of the gpt dialect go on (a module of rt or fp8 ops, which
  // the lit inputs also hold, is not something gptc compiles).
  bool isModel = false;
  module->walk([&](Operation *op) {
    isModel |= op->getDialect() && op->getDialect()->getNamespace() == "gpt";
  });
  if (!isModel || failed(gptc::summarizeModel(*module)))
    return 0;
  gptc::TrainPipelineOptions options;
  options.microBatch = 2;
  PassManager pm(&context);
  gptc::buildTrainPipeline(pm, options);
  (void)pm.run(*module);
  return 0;
}
