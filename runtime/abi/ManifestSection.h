// Where an artifact keeps its manifest, so the runtime can check it before
// dlopen runs any of the file: gptc puts the serialized Manifest in an ELF
// section of its own, `.gptc_manifest`, after a 24-byte header -- the magic
// "GPTCMAN1", the payload's size and its FNV-1a 64-bit hash, both
// little-endian -- and gpt_manifest() returns the payload. A file whose
// section is missing, cut short or altered is refused with the reason,
// instead of being mapped (a damaged page is a SIGBUS on first touch) or
// parsed. Used by gptc (rt-to-llvm), the runtime's loader and the test
// fixtures. C++ only, no MLIR.
#ifndef GPTRT_ABI_MANIFESTSECTION_H
#define GPTRT_ABI_MANIFESTSECTION_H

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gptrt::manifest_section {

inline constexpr const char *kName = ".gptc_manifest";
inline constexpr char kMagic[8] = {'G', 'P', 'T', 'C', 'M', 'A', 'N', '1'};
inline constexpr uint64_t kHeaderBytes = 24;

/// FNV-1a, 64 bits (offset basis and prime from the FNV reference,
/// http://www.isthe.com/chongo/tech/comp/fnv/).
inline uint64_t fnv1a64(const uint8_t *data, uint64_t size) {
  uint64_t hash = 14695981039346656037ull;
  for (uint64_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

inline void putLittleEndian(std::string &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

inline uint64_t getLittleEndian(const uint8_t *p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | p[i];
  return value;
}

/// The section's contents for a serialized manifest: header, then payload.
inline std::string sectionBytes(const std::string &payload) {
  std::string out(kMagic, sizeof kMagic);
  putLittleEndian(out, payload.size());
  putLittleEndian(out,
                  fnv1a64(reinterpret_cast<const uint8_t *>(payload.data()),
                          payload.size()));
  return out + payload;
}

/// Why the `.gptc_manifest` section of the ELF file `path` is not a whole,
/// unaltered manifest, or nullopt when it is. Expects a file that
/// elfSharedObjectProblem (ElfCheck.h) accepted: its section headers lie
/// inside it.
inline std::optional<std::string> problem(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return "it cannot be opened for reading";
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  auto readAt = [&](uint64_t offset, void *into, uint64_t bytes) {
    if (offset > size || bytes > size - offset)
      return false;
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char *>(into), static_cast<std::streamsize>(bytes));
    return static_cast<bool>(in);
  };
  Elf64_Ehdr header;
  if (!readAt(0, &header, sizeof header) || header.e_shoff == 0 ||
      header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shstrndx >= header.e_shnum)
    return "it has no section headers to find its manifest by";
  auto sectionHeader = [&](uint64_t index, Elf64_Shdr &section) {
    return readAt(header.e_shoff + index * sizeof(Elf64_Shdr), &section,
                  sizeof section);
  };
  Elf64_Shdr names;
  if (!sectionHeader(header.e_shstrndx, names))
    return "its section names cannot be read";
  const std::string wanted(kName);
  for (uint64_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    if (!sectionHeader(i, section))
      return "its section header " + std::to_string(i) + " cannot be read";
    char name[32] = {};
    if (section.sh_name >= names.sh_size)
      continue;
    const uint64_t nameBytes =
        std::min<uint64_t>(sizeof name - 1, names.sh_size - section.sh_name);
    if (!readAt(names.sh_offset + section.sh_name, name, nameBytes) ||
        wanted != name)
      continue;
    if (section.sh_type == SHT_NOBITS || section.sh_size < kHeaderBytes)
      return "its " + wanted + " section is " +
             std::to_string(section.sh_size) + " bytes, shorter than the " +
             std::to_string(kHeaderBytes) + "-byte manifest header";
    std::vector<uint8_t> bytes(section.sh_size);
    if (!readAt(section.sh_offset, bytes.data(), bytes.size()))
      return "its " + wanted + " section lies past its end: truncated";
    if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
      return "its " + wanted +
             " section does not start with the manifest "
             "magic \"GPTCMAN1\"";
    const uint64_t payload = getLittleEndian(bytes.data() + 8);
    const uint64_t expected = getLittleEndian(bytes.data() + 16);
    if (payload > bytes.size() - kHeaderBytes)
      return "its manifest header says " + std::to_string(payload) +
             " bytes, but the section holds " +
             std::to_string(bytes.size() - kHeaderBytes);
    const uint64_t found = fnv1a64(bytes.data() + kHeaderBytes, payload);
    if (found != expected)
      return "its manifest's checksum is " + std::to_string(found) +
             ", expected " + std::to_string(expected) +
             " (the file was altered after gptc wrote it)";
    return std::nullopt;
  }
  return "it has no " + wanted +
         " section (a shared object gptc did not write, or one from a gptc "
         "older than this runtime)";
}

} // namespace gptrt::manifest_section

#endif // GPTRT_ABI_MANIFESTSECTION_H
