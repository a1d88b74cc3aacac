// fp8-first-last-bf16: a gptc precision-policy plugin. Every GEMM in FP8
// (hybrid formats, current tensorwise scaling) except those of the first
// and last transformer block and of lm_head, which stay bf16: the layers
// next to the embeddings and the logits are the ones FP8 training recipes
// most often keep in higher precision, since errors there reach the loss
// most directly. Load it with
//   gptc --load-pass-plugin=fp8-first-last-bf16.so --precision=fp8-first-last-bf16
#include "compiler/precision/PluginApi.h"

#include <string>

namespace {

using namespace gptc;

class FirstLastBf16Policy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &operand) const override {
    if (operand.layer == "lm_head")
      return PrecisionDecision::keepHighPrecision(
          "fp8-first-last-bf16 keeps lm_head in bf16");
    // block and blockCount are set for layers named h.N.*.
    if (operand.block && operand.blockCount) {
      int64_t block = *operand.block, last = *operand.blockCount - 1;
      if (block == 0 || block == last)
        return PrecisionDecision::keepHighPrecision(
            "fp8-first-last-bf16 keeps the " +
            std::string(block == 0 ? "first" : "last") + " block (h." +
            std::to_string(block) + " of " + std::to_string(last + 1) +
            ") in bf16");
    }
    return PrecisionDecision::fp8(hybridFormat(operand), Fp8Scaling::Current);
  }
};

void registerPolicies(PolicyRegistry *registry) {
  registry->add("fp8-first-last-bf16",
                "FP8 GEMMs except the first and last block and lm_head",
                [] { return std::make_unique<FirstLastBf16Policy>(); });
}

const GptcPrecisionPluginInfo pluginInfo = {
    GPTC_PRECISION_PLUGIN_API_VERSION, "fp8-first-last-bf16", "1.0",
    registerPolicies};

} // namespace

extern "C" const GptcPrecisionPluginInfo *gptcPrecisionPluginInfo(void) {
  return &pluginInfo;
}
