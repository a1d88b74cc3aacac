// Entry inputs and outputs (see Io.h).
#include "runtime/core/Io.h"

#include "runtime/core/Context.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace gptrt {

namespace mf = gptc::manifest;

namespace {

const mf::NamedBuffer &
lookup(const google::protobuf::RepeatedPtrField<mf::NamedBuffer> &list,
       EntryKind entry, const std::string &name, const char *role) {
  const mf::NamedBuffer *nb = findBuffer(list, name);
  if (nb == nullptr) {
    std::string have;
    for (const auto &b : list)
      have += (have.empty() ? "" : ", ") + b.name();
    throw std::runtime_error(std::string(entryName(entry)) + " has no " +
                             role + " '" + name + "', expected one of [" +
                             have +
                             "]: compile the model with an entry that has it");
  }
  return *nb;
}

void checkIds(const int32_t *ids, int64_t n, int64_t lo, int64_t vocab,
              const char *what) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < lo || ids[i] >= vocab)
      throw std::runtime_error(
          std::string(what) + " " + std::to_string(ids[i]) + " at position " +
          std::to_string(i) + " is outside [" +
          (lo == 0 ? std::string("0") : std::string("ignore index")) + ", " +
          std::to_string(vocab) +
          "), the model's vocabulary: use data tokenized for this model");
}

} // namespace

void writeInput(Context &ctx, const mf::Manifest &manifest, EntryKind entry,
                const std::string &name, const int32_t *values,
                const std::vector<int64_t> &shape) {
  const mf::NamedBuffer &nb =
      lookup(entrySpec(manifest, entry).inputs(), entry, name, "input");
  const mf::Buffer &b = nb.buffer();
  if (b.dtype() != mf::I32)
    throw std::runtime_error(std::string(entryName(entry)) + " input '" +
                             name + "' is " + dtypeName(b.dtype()) +
                             ", expected i32 to copy int32 values into it");
  const std::vector<int64_t> want(b.shape().begin(), b.shape().end());
  if (shape != want)
    throw std::runtime_error(
        std::string(entryName(entry)) + " input '" + name + "' has shape " +
        shapeString(want) + ", the batch given is " + shapeString(shape) +
        ": use the micro-batch and sequence length the artifact was compiled "
        "for, or recompile it for this batch");
  ctx.copyIn(ctx.data(b), values, bufferBytes(b));
}

void writeBatch(Context &ctx, const mf::Manifest &manifest, EntryKind entry,
                const int32_t *tokens, const int32_t *targets, int64_t batch,
                int64_t seq) {
  const int64_t vocab = manifest.model().vocab();
  const int64_t n = batch * seq;
  const std::vector<int64_t> shape = {batch, seq};
  if (vocab > 0)
    checkIds(tokens, n, 0, vocab, "token");
  writeInput(ctx, manifest, entry, "tokens", tokens, shape);
  if (findBuffer(entrySpec(manifest, entry).inputs(), "targets") == nullptr)
    return;
  if (targets == nullptr)
    throw std::runtime_error(std::string(entryName(entry)) +
                             " has a 'targets' input, but no targets were "
                             "given: pass the batch's targets");
  if (vocab > 0)
    checkIds(targets, n, INT32_MIN, vocab, "target");
  writeInput(ctx, manifest, entry, "targets", targets, shape);
}

std::vector<float> readOutput(const Context &ctx, const mf::Manifest &manifest,
                              EntryKind entry, const std::string &name) {
  const mf::NamedBuffer &nb =
      lookup(entrySpec(manifest, entry).outputs(), entry, name, "output");
  const mf::Buffer &b = nb.buffer();
  if (b.dtype() != mf::F32)
    throw std::runtime_error(std::string(entryName(entry)) + " output '" +
                             name + "' is " + dtypeName(b.dtype()) +
                             ", expected f32 to read it as float");
  std::vector<float> out(static_cast<size_t>(numElements(b.shape())));
  ctx.copyOut(out.data(), ctx.data(b), out.size() * sizeof(float));
  return out;
}

float readScalarOutput(const Context &ctx, const mf::Manifest &manifest,
                       EntryKind entry, const std::string &name) {
  std::vector<float> v = readOutput(ctx, manifest, entry, name);
  if (v.size() != 1)
    throw std::runtime_error(std::string(entryName(entry)) + " output '" +
                             name + "' has " + std::to_string(v.size()) +
                             " elements, expected 1 to read it as a scalar");
  return v[0];
}

} // namespace gptrt
