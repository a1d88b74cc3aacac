// Registers the three gptc dialects and the upstream ones their programs use.
#ifndef GPTC_DIALECTS_INITDIALECTS_H
#define GPTC_DIALECTS_INITDIALECTS_H

#include "dialects/fp8/Fp8Dialect.h"
#include "dialects/gpt/GptDialect.h"
#include "dialects/rt/RtDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"

namespace gptc {

inline void registerGptcDialects(mlir::DialectRegistry &registry) {
  registry.insert<gpt::GptDialect, fp8::Fp8Dialect, rt::RtDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect>();
}

} // namespace gptc

#endif // GPTC_DIALECTS_INITDIALECTS_H
