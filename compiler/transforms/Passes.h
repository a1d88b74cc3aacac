// Declarations and registration of every gptc pass (see Passes.td).
#ifndef GPTC_COMPILER_TRANSFORMS_PASSES_H
#define GPTC_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/fp8/Fp8Dialect.h"
#include "dialects/gpt/GptDialect.h"
#include "dialects/rt/RtDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace gptc {

#define GEN_PASS_DECL
#include "compiler/transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/transforms/Passes.h.inc"

} // namespace gptc

#endif // GPTC_COMPILER_TRANSFORMS_PASSES_H
