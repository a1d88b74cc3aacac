// gpt-train-pipeline: the registered pipeline gptc runs, from the model's
// gpt dialect to rt.kernel calls in planned arenas (rt-plan-memory), so
// that `gpt-opt --pass-pipeline='builtin.module(gpt-train-pipeline{...})'`
// reproduces `gptc --emit=rt` exactly. rt-to-llvm is not part of it: it
// needs the manifest, which gptc builds from the planned module.
#ifndef GPTC_COMPILER_PIPELINES_TRAINPIPELINE_H
#define GPTC_COMPILER_PIPELINES_TRAINPIPELINE_H

#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace gptc {

/// The pipeline's options, declared once in TrainPipelineOptions.def (gptc
/// defines its flags from the same list).
struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
#define GPT_PIPELINE_OPTION(type, field, name, initial, description)           \
  Option<type> field{*this, name, llvm::cl::desc(description),                 \
                     llvm::cl::init(initial)};
#define GPT_PIPELINE_LIST_OPTION(type, field, name, description)               \
  ListOption<type> field{*this, name, llvm::cl::desc(description)};
#include "compiler/pipelines/TrainPipelineOptions.def"
};

/// The pipeline's stages, in order. gptc's --emit=fp8 runs Autodiff,
/// Precision and Fp8Layout (the storage passes wait for bufferization);
/// everything from --emit=rt on runs all of them.
enum class TrainStage : unsigned {
  Autodiff = 1,  // gpt-specialize, gpt-autodiff, gpt-optimizer,
                 // gpt-data-parallel
  Precision = 2, // fp8-precision (unless fp32), gpt-precision
  Storage = 4,   // gpt-bf16-gemm, gpt-bf16-kernels
  Fp8Layout = 8, // fp8-fuse-amax, fp8-fuse-cast, fp8-transpose-casts,
                 // fp8-reuse-scales
  Rt = 16,       // rt-bufferize, the rt-fuse-* / rt-batch-* passes,
                 // rt-plan-memory
};
inline constexpr unsigned kAllTrainStages =
    2 * static_cast<unsigned>(TrainStage::Rt) - 1;

/// Adds the passes of the stages in `stages` (a mask of TrainStage) to
/// `pm`, each switched and configured by `options`.
void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options,
                        unsigned stages = kAllTrainStages);

/// Registers gpt-train-pipeline for gpt-opt (and any MlirOptMain tool).
void registerTrainPipeline();

} // namespace gptc

#endif // GPTC_COMPILER_PIPELINES_TRAINPIPELINE_H
