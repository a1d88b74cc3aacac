// Object emission and linking (see ObjectFile.h).
#include "compiler/target/ObjectFile.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

namespace gptc {

std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context) {
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);
  return mlir::translateModuleToLLVMIR(module, context, "gpt");
}

llvm::Error writeObjectFile(llvm::Module &module, llvm::StringRef path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string tripleName = llvm::sys::getDefaultTargetTriple();
  llvm::Triple triple(tripleName);
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for this host (%s): %s",
                                   tripleName.c_str(), error.c_str());
  // The generated code only sequences calls into the runtime, so a generic
  // CPU is enough and keeps artifacts portable across x86-64 machines.
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write object file '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("LLVM cannot emit object files for %s",
                                   tripleName.c_str());
  passes.run(module);
  os.flush();
  if (os.has_error())
    return llvm::createStringError(os.error(), "cannot write object file '%s'",
                                   path.str().c_str());
  return llvm::Error::success();
}

llvm::Error linkSharedObject(llvm::StringRef objectPath,
                             llvm::StringRef soPath) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return llvm::createStringError(
        cc.getError(), "cannot link '%s': no `cc` on PATH (install gcc)",
        soPath.str().c_str());
  llvm::SmallString<256> tmp(soPath);
  tmp += ".tmp-%%%%%%";
  llvm::SmallString<256> tmpPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(tmp, tmpPath))
    return llvm::createStringError(ec, "cannot create a file next to '%s': %s",
                                   soPath.str().c_str(), ec.message().c_str());
  // The runtime's gptrt_* symbols stay undefined: gptrun provides them.
  llvm::SmallVector<llvm::StringRef> args{*cc, "-shared", "-o", tmpPath,
                                          objectPath};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0) {
    llvm::sys::fs::remove(tmpPath);
    return llvm::createStringError("`cc -shared` failed for '%s' (status %d) %s",
                                   soPath.str().c_str(), status,
                                   message.c_str());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpPath, soPath)) {
    llvm::sys::fs::remove(tmpPath);
    return llvm::createStringError(ec, "cannot write '%s': %s",
                                   soPath.str().c_str(), ec.message().c_str());
  }
  return llvm::Error::success();
}

} // namespace gptc
