// A fingerprint of the kernel table (gptrt_kernels.def): gptc records it in
// each artifact's manifest and the runtime refuses an artifact whose
// fingerprint differs from its own, so a compiler and runtime built from
// different tables never call each other with mismatched arguments, even
// where GPTRT_ABI_VERSION was not bumped. C++ only (constexpr).
#ifndef GPTRT_ABI_KERNELTABLEFINGERPRINT_H
#define GPTRT_ABI_KERNELTABLEFINGERPRINT_H

#include <cstdint>

namespace gptrt {

namespace detail {
// Each row as text: the preprocessor's stringizing turns every run of
// whitespace into one space and drops comments, so the text (and the hash)
// depends on the rows alone, not on their layout in the file.
#define GPTRT_KERNEL(name, list) "K " #name " " #list "\n"
#define GPTRT_ENTRY(result, name, list) "E " #result " " #name " " #list "\n"
#define GPTRT_DESCRIPTOR(name, fields) "D " #name " " #fields "\n"
inline constexpr char kKernelTableText[] =
#include "gptrt_kernels.def"
    ;

/// 64-bit FNV-1a (Fowler, Noll, Vo; offset basis and prime as published).
constexpr uint64_t fnv1a(const char *text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (; *text != '\0'; ++text)
    hash = (hash ^ static_cast<unsigned char>(*text)) * 0x100000001b3ULL;
  return hash;
}
} // namespace detail

/// The kernel table's fingerprint (never 0: 0 is a manifest without one).
inline constexpr uint64_t kKernelTableFingerprint =
    detail::fnv1a(detail::kKernelTableText) | 1;

} // namespace gptrt

#endif // GPTRT_ABI_KERNELTABLEFINGERPRINT_H
