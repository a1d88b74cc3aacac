// The gpt dialect: model graphs as written by the DSL (see GptOps.td).
#ifndef GPTC_DIALECTS_GPT_GPTDIALECT_H
#define GPTC_DIALECTS_GPT_GPTDIALECT_H

// Generated op classes need the builder and assembly interfaces declared first.
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/gpt/GptDialect.h.inc"
#include "dialects/gpt/GptEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/gpt/GptAttrs.h.inc"

#include "dialects/gpt/GptInterfaces.h.inc"
#include "dialects/gpt/GptTraits.h"

#define GET_OP_CLASSES
#include "dialects/gpt/GptOps.h.inc"

#endif // GPTC_DIALECTS_GPT_GPTDIALECT_H
