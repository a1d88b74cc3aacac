// The last steps of gptc: LLVM dialect -> LLVM IR -> object file through
// LLVM's TargetMachine for this host -> shared object with the system `cc`.
#ifndef GPTC_COMPILER_TARGET_OBJECTFILE_H
#define GPTC_COMPILER_TARGET_OBJECTFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace gptc {

/// Translates a module that holds only LLVM dialect ops; fails with a
/// diagnostic on the module otherwise.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context);

/// Writes position-independent object code for the host to `path`.
llvm::Error writeObjectFile(llvm::Module &module, llvm::StringRef path);

/// Links `objectPath` into the shared object `soPath` with `cc -shared`,
/// through a temporary file renamed into place when the link succeeded.
llvm::Error linkSharedObject(llvm::StringRef objectPath, llvm::StringRef soPath);

} // namespace gptc

#endif // GPTC_COMPILER_TARGET_OBJECTFILE_H
