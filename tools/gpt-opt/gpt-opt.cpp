// gpt-opt: mlir-opt over the gptc dialects and passes, for lit tests and for
// running any single pass by hand.
#include "compiler/pipelines/TrainPipeline.h"
#include "compiler/transforms/Passes.h"
#include "dialects/InitDialects.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  gptc::registerGptcDialects(registry);
  // Upstream canonicalize, cse, symbol-dce, ... next to gptc's own passes.
  mlir::registerTransformsPasses();
  gptc::registerGptcPasses();
  // What gptc runs, as one pipeline (compiler/pipelines/TrainPipeline.h).
  gptc::registerTrainPipeline();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "gpt-opt: gptc's dialects and passes\n", registry));
}
