// The fp8 dialect: FP8 scaling as explicit IR (see Fp8Ops.td).
#ifndef GPTC_DIALECTS_FP8_FP8DIALECT_H
#define GPTC_DIALECTS_FP8_FP8DIALECT_H

// Generated op classes need the builder and assembly interfaces declared first.
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/fp8/Fp8Dialect.h.inc"
#include "dialects/fp8/Fp8Enums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/fp8/Fp8Attrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/fp8/Fp8Ops.h.inc"

#endif // GPTC_DIALECTS_FP8_FP8DIALECT_H
