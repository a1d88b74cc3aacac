// Abi.h's list of the gptrt_* definitions, generated from the kernel table
// (runtime/abi/gptrt_kernels.def), and the check that dlopen'ed artifacts
// resolve to them.
#include "runtime/abi/gptrt.h"

#include "runtime/core/Abi.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gptrt {

// Generated from the kernel table: one entry per row, each taken as a
// pointer of exactly the row's C type, so a definition whose parameters
// differ from its row is a compile error (it would be another overload of
// the extern "C" name) rather than a call with the wrong arguments.
const std::vector<AbiSymbol> &abiSymbols() {
#define GPTRT_IN(type, name) , const type *
#define GPTRT_IN_OPT(type, name) , const type *
#define GPTRT_OUT(type, name) , type *
#define GPTRT_OUT_OPT(type, name) , type *
#define GPTRT_I64(name) , int64_t
#define GPTRT_F64(name) , double
#define GPTRT_I64_TABLE(name) , const int64_t *
#define GPTRT_DESC(desc) , const gptrt_##desc *
// The row's parameter list arrives expanded (commas and all), so it is
// passed on as the variadic part.
#define GPTRT_SYMBOL(result, name, ...)                                        \
  AbiSymbol{"gptrt_" #name,                                                    \
            reinterpret_cast<void *>(                                          \
                static_cast<result (*)(gptrt_context * __VA_ARGS__)>(          \
                    &gptrt_##name))},
#define GPTRT_ENTRY(result, name, params) GPTRT_SYMBOL(result, name, params)
#define GPTRT_KERNEL(name, params) GPTRT_SYMBOL(void, name, params)
  static const std::vector<AbiSymbol> symbols = {
#include "runtime/abi/gptrt_kernels.def"
  };
#undef GPTRT_IN
#undef GPTRT_IN_OPT
#undef GPTRT_OUT
#undef GPTRT_OUT_OPT
#undef GPTRT_I64
#undef GPTRT_F64
#undef GPTRT_I64_TABLE
#undef GPTRT_DESC
#undef GPTRT_SYMBOL
  return symbols;
}

void checkAbiExported() {
  for (const AbiSymbol &s : abiSymbols()) {
    void *found = dlsym(RTLD_DEFAULT, s.name);
    if (found == s.address)
      continue;
    throw std::runtime_error(
        std::string("runtime symbol ") + s.name +
        (found == nullptr ? " is not in the executable's dynamic symbol table"
                          : " resolves to another library's definition") +
        ", expected this runtime's: link the executable with the gptrt CMake "
        "target (it adds -Wl,--dynamic-list=gptrt.dynlist) or with "
        "ENABLE_EXPORTS (-rdynamic), and load no other gptrt");
  }
}

} // namespace gptrt
