// Atomic output files (see OutputFile.h).
#include "compiler/driver/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace gptc {

llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (path == "-") {
    write(llvm::outs());
    llvm::outs().flush();
    return llvm::Error::success();
  }
  // The temporary file lives in the target's directory so the rename stays
  // within one file system and is atomic.
  llvm::SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  int fd;
  llvm::SmallString<256> tmpPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tmpPath))
    return llvm::createStringError(ec, "cannot create a file next to '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    write(os);
    os.flush();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      llvm::sys::fs::remove(tmpPath);
      return llvm::createStringError(ec, "cannot write '%s': %s",
                                     path.str().c_str(), ec.message().c_str());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpPath, path)) {
    llvm::sys::fs::remove(tmpPath);
    return llvm::createStringError(ec, "cannot write '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  }
  return llvm::Error::success();
}

} // namespace gptc
