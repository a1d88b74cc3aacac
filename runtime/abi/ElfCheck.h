// Checks, before dlopen maps it, that a file is a whole ELF shared object
// for this machine: dlopen maps a truncated one and the first touch of a
// missing page is a SIGBUS with nothing on stderr. Used by the runtime's
// artifact loader and the compiler's plugin loader. C++ only.
#ifndef GPTRT_ABI_ELFCHECK_H
#define GPTRT_ABI_ELFCHECK_H

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

namespace gptrt {

/// Why `path` is not a complete ELF shared object this process can load
/// (truncated, not ELF, another word size or byte order, not a shared
/// object), or nullopt when its headers and every segment and section
/// header they point to lie inside the file.
inline std::optional<std::string> elfSharedObjectProblem(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return "it cannot be opened for reading";
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  Elf64_Ehdr header;
  if (size < sizeof header)
    return "it is " + std::to_string(size) + " bytes, shorter than an ELF header";
  in.seekg(0);
  in.read(reinterpret_cast<char *>(&header), sizeof header);
  if (!in || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "it does not start with the ELF magic bytes (not a shared object)";
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    return "it is not a 64-bit ELF file";
  const uint16_t one = 1;
  const bool little = *reinterpret_cast<const uint8_t *>(&one) == 1;
  if (header.e_ident[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB))
    return "its byte order is not this machine's";
  if (header.e_type != ET_DYN)
    return "it is an ELF file but not a shared object (e_type " +
           std::to_string(header.e_type) + ")";
  // Inside the file: [offset, offset + count * entry) without overflow.
  auto inside = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    return offset <= size && (entry == 0 || count <= (size - offset) / entry);
  };
  if (header.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr)))
    return "its program headers lie past its end (" + std::to_string(size) +
           " bytes): truncated";
  if (header.e_shoff != 0 &&
      !inside(header.e_shoff, header.e_shnum, header.e_shentsize))
    return "its section headers lie past its end (" + std::to_string(size) +
           " bytes): truncated";
  in.seekg(static_cast<std::streamoff>(header.e_phoff));
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    in.read(reinterpret_cast<char *>(&segment), sizeof segment);
    if (!in)
      return "its program header " + std::to_string(i) + " cannot be read";
    if (segment.p_type != PT_NULL && !inside(segment.p_offset, 1, segment.p_filesz))
      return "its segment " + std::to_string(i) + " (bytes " +
             std::to_string(segment.p_offset) + " to " +
             std::to_string(segment.p_offset + segment.p_filesz) +
             ") lies past its end (" + std::to_string(size) +
             " bytes): truncated";
  }
  return std::nullopt;
}

} // namespace gptrt

#endif // GPTRT_ABI_ELFCHECK_H
