// Writes an output file so that it is either complete or absent: the content
// goes to a temporary file next to the target, which is renamed over it only
// after everything was written and flushed.
#ifndef GPTC_COMPILER_DRIVER_OUTPUTFILE_H
#define GPTC_COMPILER_DRIVER_OUTPUTFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace gptc {

/// Calls `write` on a stream to a temporary file and renames it to `path`.
/// "-" writes to stdout. On failure nothing is left at `path` or beside it.
llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace gptc

#endif // GPTC_COMPILER_DRIVER_OUTPUTFILE_H
