// gpt-train-pipeline's passes, stage by stage (see TrainPipeline.h).
#include "compiler/pipelines/TrainPipeline.h"

#include "compiler/transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace gptc {

namespace {

bool has(unsigned stages, TrainStage stage) {
  return stages & static_cast<unsigned>(stage);
}

} // namespace

void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &o,
                        unsigned stages) {
  if (has(stages, TrainStage::Autodiff)) {
    GptSpecializeOptions specialize;
    specialize.microBatch = o.microBatch;
    specialize.seq = o.seqLength;
    pm.addPass(createGptSpecialize(specialize));
    GptAutodiffOptions autodiff;
    autodiff.recompute.assign(o.recompute.begin(), o.recompute.end());
    pm.addPass(createGptAutodiff(autodiff));
    pm.addPass(createGptOptimizer());
    GptDataParallelOptions dataParallel;
    dataParallel.bucketMb = o.gradBucketMb;
    dataParallel.gradComm = o.gradComm;
    dataParallel.zero = o.zeroStage;
    pm.addPass(createGptDataParallel(dataParallel));
  }
  if (has(stages, TrainStage::Precision)) {
    // Every policy goes through fp8-precision; bf16's leaves the IR as is.
    if (o.precision != "fp32") {
      Fp8PrecisionOptions fp8;
      fp8.policy = o.precision;
      fp8.exclude.assign(o.fp8Exclude.begin(), o.fp8Exclude.end());
      fp8.include.assign(o.fp8Include.begin(), o.fp8Include.end());
      fp8.minMnk = o.fp8MinMnk;
      fp8.historyLength = o.fp8History;
      fp8.amaxReduction = o.fp8AmaxReduction;
      fp8.margin = o.fp8Margin;
      fp8.weightScaling = o.fp8WeightScaling;
      fp8.fastAccum = o.fp8FastAccum;
      pm.addPass(createFp8Precision(fp8));
    }
    GptPrecisionOptions storage;
    storage.precision = o.precision == "fp32" ? "fp32" : "bf16";
    pm.addPass(createGptPrecision(storage));
  }
  // The storage passes before the FP8 fusions: once a producer writes its
  // bf16 result itself, fp8-fuse-amax / fp8-fuse-cast fold the amax and
  // cast into that producer's epilogue (layernorm_fwd+amax, ...) rather
  // than into a separate f32 -> bf16 convert that would then stay.
  if (has(stages, TrainStage::Storage)) {
    if (o.bf16Gemm)
      pm.addPass(createGptBf16Gemm());
    if (o.bf16Kernels)
      pm.addPass(createGptBf16Kernels());
  }
  if (has(stages, TrainStage::Fp8Layout)) {
    if (o.fp8Fusion) {
      pm.addPass(createFp8FuseAmax());
      pm.addPass(createFp8FuseCast());
    }
    if (o.fp8TransposeCasts)
      pm.addPass(createFp8TransposeCasts());
    if (o.fp8ReuseScales)
      pm.addPass(createFp8ReuseScales());
  }
  if (has(stages, TrainStage::Rt)) {
    pm.addPass(createRtBufferize());
    if (o.gemmEpilogues)
      pm.addPass(createRtFuseGemmEpilogue());
    if (o.fuseAddLayerNorm)
      pm.addPass(createRtFuseAddLayerNorm());
    if (o.fuseQkvAttention)
      pm.addPass(createRtFuseQkvAttention());
    if (o.fuseClassifier)
      pm.addPass(createRtFuseClassifier());
    if (o.fuseDualCasts)
      pm.addPass(createRtFuseDualCast());
    if (o.fp8Fusion) {
      pm.addPass(createRtFuseAmax());
      pm.addPass(createRtFuseProducerCast());
    }
    if (o.fuseGradAccumulation)
      pm.addPass(createRtFuseGradAccumulation());
    if (o.cacheWeightCasts)
      pm.addPass(createRtCacheWeightCasts());
    if (o.fuseCastScales) {
      pm.addPass(createRtFuseCastScale());
      pm.addPass(createRtFuseRowwiseCast());
    }
    if (o.batchFp8StateUpdates)
      pm.addPass(createRtBatchFp8StateUpdates());
    if (o.fuseDualCasts)
      pm.addPass(createRtFuseDelayedDualCast());
    if (o.hoistTransposedCasts)
      pm.addPass(createRtHoistTransposedCasts());
    if (o.fuseDualCasts)
      pm.addPass(createRtFuseProducerDualCast());
    if (o.batchFp8StateScales)
      pm.addPass(createRtBatchFp8StateScales());
    if (o.batchAdamw)
      pm.addPass(createRtBatchAdamw());
    pm.addPass(createRtPlanMemory());
  }
}

void registerTrainPipeline() {
  PassPipelineRegistration<TrainPipelineOptions>(
      "gpt-train-pipeline",
      "What gptc runs: gpt-specialize through rt-plan-memory, every pass "
      "switched and configured as gptc's flags of the same names do (their "
      "descriptions below; the passes in docs/passes.md); micro-batch is "
      "required here",
      [](OpPassManager &pm, const TrainPipelineOptions &options) {
        buildTrainPipeline(pm, options);
      });
}

} // namespace gptc
