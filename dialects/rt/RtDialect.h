// The rt dialect: the runtime contract after bufferization (see RtOps.td).
#ifndef GPTC_DIALECTS_RT_RTDIALECT_H
#define GPTC_DIALECTS_RT_RTDIALECT_H

// Generated op classes need the builder and assembly interfaces declared first.
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/rt/RtDialect.h.inc"
#include "dialects/rt/RtEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.h.inc"

#endif // GPTC_DIALECTS_RT_RTDIALECT_H
