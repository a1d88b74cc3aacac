// Parameters in a Context: seeded initialisation from the manifest's Init
// specs, and export/import of the f32 master values to a directory (for
// parity tests against PyTorch, `gptrun export`, and later checkpoints).
//
// Export format (directory DIR):
//   DIR/params.index   text, first line "gptc-params 1", then one line per
//                      untied param: NAME FILE REAL_ROWS D0 D1 ... (space
//                      separated; REAL_ROWS as in the manifest, 0 = all)
//   DIR/FILE           the value buffer as raw little-endian f32, row-major,
//                      padding rows included (numpy: np.fromfile(FILE, '<f4')
//                      .reshape(D0, D1, ...))
// Tied params have no files: they share the buffers of the one they name.
#ifndef GPTRT_CORE_PARAMS_H
#define GPTRT_CORE_PARAMS_H

#include "runtime/abi/manifest.pb.h"

#include <cstdint>
#include <string>

namespace gptrt {

class Context;

constexpr const char *kParamsIndexFile = "params.index";

// Writes every untied param's value buffer: NORMAL(0, std), ZEROS or ONES;
// rows at and past real_rows (when non-zero) are zero. Each param draws
// from its own stream, paramSeed(seed, name) (see Rng.h), so the values
// depend only on the seed, the name and the shape.
void initParams(const gptc::manifest::Manifest &manifest, Context &ctx,
                uint64_t seed);

// Creates dir if needed and writes the files above (each written to a
// temporary name and renamed). Throws std::runtime_error on I/O errors and
// for names with whitespace.
// Which of a parameter's persistent buffers an export writes.
enum class ParamBuffer { Value, Grad };

void exportParams(const gptc::manifest::Manifest &manifest, const Context &ctx,
                  const std::string &dir,
                  ParamBuffer which = ParamBuffer::Value);

// Reads an export back into the value buffers. Every untied param of the
// manifest must be in the index with the same shape and a file of exactly
// its size, and the index must name no other params; else throws
// std::runtime_error naming the param, what was expected and found.
void importParams(const gptc::manifest::Manifest &manifest, Context &ctx,
                  const std::string &dir);

} // namespace gptrt

#endif // GPTRT_CORE_PARAMS_H
