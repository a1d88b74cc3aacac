// gptc's own precision policies: bf16, fp8-tensorwise and fp8-delayed.
#ifndef GPTC_COMPILER_PRECISION_BUILTINPOLICIES_H
#define GPTC_COMPILER_PRECISION_BUILTINPOLICIES_H

#include "compiler/precision/PolicyRegistry.h"

namespace gptc {

/// Adds the built-in policies to `registry`, in the order error messages
/// list them.
void registerBuiltinPolicies(PolicyRegistry &registry);

} // namespace gptc

#endif // GPTC_COMPILER_PRECISION_BUILTINPOLICIES_H
