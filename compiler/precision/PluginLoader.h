// gptc --load-pass-plugin=LIB.so: loads a precision-policy plugin, checks
// its API version and adds its policies to a registry.
#ifndef GPTC_COMPILER_PRECISION_PLUGINLOADER_H
#define GPTC_COMPILER_PRECISION_PLUGINLOADER_H

#include "compiler/precision/PolicyRegistry.h"

#include "llvm/Support/Error.h"

namespace gptc {

/// Loads the plugin at `path` and adds its policies to `registry`. The
/// error, one line, names the file, what is wrong with it and the fix.
llvm::Error loadPrecisionPlugin(llvm::StringRef path,
                                PolicyRegistry &registry);

} // namespace gptc

#endif // GPTC_COMPILER_PRECISION_PLUGINLOADER_H
