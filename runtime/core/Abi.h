// C++ side of the C ABI (runtime/abi/gptrt.h): which gptrt_* symbols the
// runtime defines, and a check that they are visible to dlopen'ed artifacts.
//
// Artifacts resolve gptrt_* against the executable that loads them, so the
// executable must put those symbols in its dynamic symbol table. Linking the
// `gptrt` CMake target does that by itself: gptrt adds
// -Wl,--dynamic-list=runtime/core/gptrt.dynlist to whatever links it (an
// alternative is ENABLE_EXPORTS / -rdynamic, which exports everything), and
// Artifact references every gptrt_* function through abiSymbols(), so the
// objects that define them are always pulled out of the static library.
#ifndef GPTRT_CORE_ABI_H
#define GPTRT_CORE_ABI_H

#include <vector>

namespace gptrt {

struct AbiSymbol {
  const char *name;
  void *address; // of the definition in this binary
};

// Every gptrt_* function of the kernel table, in its order.
const std::vector<AbiSymbol> &abiSymbols();

// Throws std::runtime_error naming the first gptrt_* symbol that the dynamic
// linker does not resolve to this runtime's definition (not exported, or
// shadowed by another library), with the link fix.
void checkAbiExported();

} // namespace gptrt

#endif // GPTRT_CORE_ABI_H
