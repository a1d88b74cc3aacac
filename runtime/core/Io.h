// Entry-point inputs and outputs: copying a batch of int32 tokens/targets
// into an entry's named input buffers (with shape and vocabulary checks) and
// reading its named f32 outputs back after it ran.
#ifndef GPTRT_CORE_IO_H
#define GPTRT_CORE_IO_H

#include "runtime/abi/manifest.pb.h"
#include "runtime/core/ManifestCheck.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrt {

class Context;

// Copies values (row-major, `shape`) into the i32 input `name` of the entry.
// Throws std::runtime_error when the entry has no such input, it is not i32,
// or shape differs from the buffer's.
void writeInput(Context &ctx, const gptc::manifest::Manifest &manifest,
                EntryKind entry, const std::string &name,
                const int32_t *values, const std::vector<int64_t> &shape);

// Writes "tokens" ([batch, seq]) and, when the entry has a "targets" input,
// "targets" (then targets must not be null). Tokens must be in
// [0, model.vocab) and targets below model.vocab (negative targets pass
// through for the loss's ignore_index) when the manifest gives the vocab.
void writeBatch(Context &ctx, const gptc::manifest::Manifest &manifest,
                EntryKind entry, const int32_t *tokens, const int32_t *targets,
                int64_t batch, int64_t seq);

// The f32 output `name` of the entry (every element, row-major).
std::vector<float> readOutput(const Context &ctx,
                              const gptc::manifest::Manifest &manifest,
                              EntryKind entry, const std::string &name);
// An output of exactly one element ("loss", "grad_norm").
float readScalarOutput(const Context &ctx,
                       const gptc::manifest::Manifest &manifest,
                       EntryKind entry, const std::string &name);

} // namespace gptrt

#endif // GPTRT_CORE_IO_H
