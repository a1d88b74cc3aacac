// Out-of-line parts of the policy interface (see PrecisionPolicy.h). The
// destructor lives here so the vtable and type info of PrecisionPolicy exist
// once, in this shared library, for built-in and plugin policies alike.
#include "compiler/precision/PrecisionPolicy.h"

namespace gptc {

PrecisionPolicy::~PrecisionPolicy() = default;

Fp8Format hybridFormat(const GemmOperand &operand) {
  return operand.isGradient ? Fp8Format::E5M2 : Fp8Format::E4M3;
}

llvm::StringRef stringifyRole(GemmRole role) {
  switch (role) {
  case GemmRole::Forward:
    return "forward";
  case GemmRole::GradInput:
    return "grad_input";
  case GemmRole::GradWeight:
    return "grad_weight";
  }
  return "?";
}

} // namespace gptc
