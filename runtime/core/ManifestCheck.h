// Reading a manifest safely: sizes of dtypes and buffers, the four entry
// points by kind, lookups by name, and validateManifest, which checks that
// everything the runtime will dereference (arena indices, buffer extents,
// parameter shapes and dtypes, entry buffers) is consistent before any
// generated code runs.
#ifndef GPTRT_CORE_MANIFESTCHECK_H
#define GPTRT_CORE_MANIFESTCHECK_H

#include "runtime/abi/manifest.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrt {

// CastWeights is optional (rt-cache-weight-casts): it fills the
// WEIGHT_CACHE arena that the other entries read.
enum class EntryKind {
  TrainStep,
  EvalStep,
  Logits,
  OptimizerStep,
  CastWeights
};
constexpr EntryKind kAllEntries[] = {
    EntryKind::TrainStep, EntryKind::EvalStep, EntryKind::Logits,
    EntryKind::OptimizerStep, EntryKind::CastWeights};

// "train_step", "eval_step", "logits", "optimizer_step", "cast_weights"
// (the field names).
const char *entryName(EntryKind kind);
const gptc::manifest::Entry &entrySpec(const gptc::manifest::Manifest &m,
                                       EntryKind kind);
// An entry is declared when its symbol is non-empty.
bool hasEntry(const gptc::manifest::Manifest &m, EntryKind kind);

// Bytes per element; 0 for DTYPE_UNSPECIFIED.
size_t dtypeSize(gptc::manifest::DType dtype);
const char *dtypeName(gptc::manifest::DType dtype);

// Product of the dims (1 for rank 0). Throws std::runtime_error for a
// negative dim or an overflow.
int64_t numElements(const google::protobuf::RepeatedField<int64_t> &shape);
uint64_t bufferBytes(const gptc::manifest::Buffer &buffer);
// "[2, 3]"
std::string shapeString(const google::protobuf::RepeatedField<int64_t> &shape);
std::string shapeString(const std::vector<int64_t> &shape);

// nullptr when absent.
const gptc::manifest::Param *findParam(const gptc::manifest::Manifest &m,
                                       const std::string &name);
const gptc::manifest::NamedBuffer *
findBuffer(const google::protobuf::RepeatedPtrField<gptc::manifest::NamedBuffer>
               &buffers,
           const std::string &name);

// Throws std::runtime_error with one line "<source>: <what> is <found>,
// expected <expected>: <fix>" for the first problem found. `source` names
// where the manifest came from ("artifact tiny.so").
void validateManifest(const gptc::manifest::Manifest &m,
                      const std::string &source);

} // namespace gptrt

#endif // GPTRT_CORE_MANIFESTCHECK_H
