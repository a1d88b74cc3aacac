// The built-in policies (see BuiltinPolicies.h). Each is a few lines: the
// rewriting, the eligibility checks and the filters live in fp8-precision.
#include "compiler/precision/BuiltinPolicies.h"

namespace gptc {

namespace {

/// No FP8 at all: the baseline every FP8 policy is compared with.
class Bf16Policy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &) const override {
    return PrecisionDecision::keepHighPrecision("policy bf16");
  }
  bool mayUseFp8() const override { return false; }
};

/// Every eligible GEMM in FP8, hybrid formats, with the scale of each
/// operand taken from its own amax in the same step: robust to sudden
/// changes of range, at the cost of one reduction per operand first.
class TensorwisePolicy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &operand) const override {
    return PrecisionDecision::fp8(hybridFormat(operand), Fp8Scaling::Current);
  }
};

/// As fp8-tensorwise, with each scale from the amax history of the
/// operand (TransformerEngine's delayed scaling).
class DelayedPolicy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &operand) const override {
    return PrecisionDecision::fp8(hybridFormat(operand), Fp8Scaling::Delayed);
  }
};

/// Every eligible GEMM in FP8, hybrid formats, with a power-of-two scale per
/// row of each operand (torchao's "rowwise" recipe): outliers cost only
/// their row's precision, and power-of-two scales multiply exactly.
class RowwisePolicy : public PrecisionPolicy {
public:
  PrecisionDecision decide(const GemmOperand &operand) const override {
    PrecisionDecision decision =
        PrecisionDecision::fp8(hybridFormat(operand), Fp8Scaling::Rowwise);
    decision.powerOfTwo = true;
    return decision;
  }
};

template <typename Policy>
void addBuiltin(PolicyRegistry &registry, llvm::StringRef name,
                llvm::StringRef summary) {
  registry.add(PolicyEntry{name.str(), summary.str(),
                           [] { return std::make_unique<Policy>(); },
                           "built in"});
}

} // namespace

void registerBuiltinPolicies(PolicyRegistry &registry) {
  addBuiltin<Bf16Policy>(registry, "bf16", "every GEMM in bf16 (no FP8)");
  addBuiltin<TensorwisePolicy>(
      registry, "fp8-tensorwise",
      "FP8 GEMMs, E4M3 x E4M3 forward / E5M2 gradients, current scaling");
  addBuiltin<DelayedPolicy>(
      registry, "fp8-delayed",
      "FP8 GEMMs, E4M3 x E4M3 forward / E5M2 gradients, scales from an amax "
      "history");
  addBuiltin<RowwisePolicy>(
      registry, "fp8-rowwise",
      "FP8 GEMMs, E4M3 x E4M3 forward / E5M2 gradients, a power-of-two scale "
      "per row of each operand");
}

} // namespace gptc
