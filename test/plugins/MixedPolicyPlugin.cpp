// Test plugin "test-mixed": a policy that makes fp8-precision take every
// path a per-operand decision can lead to, checked by
// test/tools/gptc/plugin-policy.test.
#include "compiler/precision/PluginApi.h"

using namespace gptc;

namespace {

class MixedPolicy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &operand) const override {
    llvm::StringRef layer = operand.layer;
    // Both operands high precision: the whole GEMM stays bf16.
    if (layer.ends_with(".mlp.fc"))
      return PrecisionDecision::keepHighPrecision("test keeps mlp.fc");
    // One operand high precision: the GEMM stays bf16 too.
    if (layer.ends_with(".mlp.proj") && operand.index == 1)
      return PrecisionDecision::keepHighPrecision("test keeps mlp.proj's b");
    // E5M2 x E5M2 has no FP8 GEMM: fp8-precision must keep it in bf16.
    if (layer.ends_with(".attn.qkv") && operand.role != GemmRole::Forward)
      return PrecisionDecision::fp8(Fp8Format::E5M2, Fp8Scaling::Current);
    // Weights of attn.proj delayed, with their own recipe; activations current.
    if (layer.ends_with(".attn.proj") && operand.role == GemmRole::Forward &&
        operand.isParameter) {
      PrecisionDecision decision =
          PrecisionDecision::fp8(Fp8Format::E4M3, Fp8Scaling::Delayed);
      decision.amaxHistory = 8;
      decision.margin = 1;
      decision.powerOfTwo = true;
      return decision;
    }
    // The last block, by index and count.
    if (operand.block && operand.blockCount &&
        *operand.block + 1 == *operand.blockCount)
      return PrecisionDecision::keepHighPrecision(
          "test keeps the last block (" + std::to_string(*operand.block) +
          " of " + std::to_string(*operand.blockCount) + ")");
    return PrecisionDecision::fp8(hybridFormat(operand), Fp8Scaling::Current);
  }
};

void registerPolicies(PolicyRegistry *registry) {
  registry->add("test-mixed", "per-operand decisions for gptc's lit tests",
                [] { return std::make_unique<MixedPolicy>(); });
}

const GptcPrecisionPluginInfo info = {GPTC_PRECISION_PLUGIN_API_VERSION,
                                      "test-mixed-policy", "1",
                                      registerPolicies};

} // namespace

extern "C" const GptcPrecisionPluginInfo *gptcPrecisionPluginInfo(void) {
  return &info;
}
