// ZeRO-1 ownership of gradient elements (see OptimizerShard.h).
#include "runtime/core/OptimizerShard.h"

#include "runtime/abi/manifest.pb.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mf = gptc::manifest;

namespace gptrt {

BucketSlice bucketSlice(int64_t n, int rank, int world) {
  BucketSlice s;
  s.stride = (n + world - 1) / world;
  s.begin = std::min<int64_t>(n, s.stride * rank);
  s.count = std::min<int64_t>(n, s.begin + s.stride) - s.begin;
  return s;
}

OptimizerShard::OptimizerShard(const mf::Manifest &manifest, int rank,
                               int world)
    : rank_(rank), world_(world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("ZeRO-1 shard of rank " + std::to_string(rank) +
                                " in a world of " + std::to_string(world) +
                                ": expected 0 <= rank < world");
  for (const mf::Arena &arena : manifest.arenas())
    if (arena.kind() == mf::GRADS)
      gradElements_ = static_cast<int64_t>(arena.size() / 4);
  if (manifest.grad_buckets_size() == 0)
    throw std::invalid_argument(
        "the artifact has no gradient buckets, which ZeRO-1 shards along: "
        "compile it with gptc --zero=1 --grad-bucket-mb > 0");
  for (const mf::GradBucket &b : manifest.grad_buckets()) {
    if (b.offset() < 0 || b.offset() % 4 != 0 || b.elements() < 0 ||
        b.offset() / 4 + b.elements() > gradElements_)
      throw std::invalid_argument(
          "gradient bucket " + std::to_string(b.bucket()) + " (offset " +
          std::to_string(b.offset()) + " bytes, " +
          std::to_string(b.elements()) + " elements) is not inside the " +
          std::to_string(gradElements_) +
          "-element grads arena: rebuild the artifact with this gptc");
    buckets_.push_back({b.offset() / 4, b.elements(), 0});
  }
  std::sort(buckets_.begin(), buckets_.end(),
            [](const Bucket &a, const Bucket &b) { return a.begin < b.begin; });
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket &b = buckets_[i];
    if (i > 0 && buckets_[i - 1].begin + buckets_[i - 1].elements > b.begin)
      throw std::invalid_argument(
          "gradient buckets overlap at element " + std::to_string(b.begin) +
          ": each gradient must be in one bucket; rebuild the artifact");
    b.localBegin = localElements_;
    BucketSlice s = bucketSlice(b.elements, rank, world);
    if (s.count > 0)
      owned_.push_back({b.begin + s.begin, s.count, b.localBegin});
    localElements_ += s.stride;
  }
}

uint64_t OptimizerShard::optimizerBytes() const {
  uint64_t bytes = 2 * static_cast<uint64_t>(localElements_) * 4;
  return (bytes + 63) / 64 * 64;
}

void OptimizerShard::extract(const float *full, float *shard) const {
  std::fill(shard, shard + 2 * localElements_, 0.0f);
  for (const Range &r : owned_) {
    std::copy_n(full + r.gradBegin, r.count, shard + r.localBegin);
    std::copy_n(full + gradElements_ + r.gradBegin, r.count,
                shard + localElements_ + r.localBegin);
  }
}

void OptimizerShard::insert(const float *shard, float *full) const {
  for (const Range &r : owned_) {
    std::copy_n(shard + r.localBegin, r.count, full + r.gradBegin);
    std::copy_n(shard + localElements_ + r.localBegin, r.count,
                full + gradElements_ + r.gradBegin);
  }
}

std::vector<OptimizerShard::Placement>
OptimizerShard::placements(size_t stride) const {
  std::vector<Placement> copies;
  for (int rank = 0; rank < world_; ++rank)
    for (const Bucket &b : buckets_) {
      BucketSlice s = bucketSlice(b.elements, rank, world_);
      if (s.count > 0)
        copies.push_back({static_cast<size_t>(rank) * stride +
                              static_cast<size_t>(b.localBegin),
                          static_cast<size_t>(b.begin + s.begin),
                          static_cast<size_t>(s.count)});
    }
  return copies;
}

void OptimizerShard::place(const float *shards, size_t stride,
                           float *full) const {
  for (const Placement &p : placements(stride))
    std::copy_n(shards + p.from, p.count, full + p.to);
}

void OptimizerShard::assemble(const float *shards, float *full) const {
  const size_t stride = 2 * static_cast<size_t>(localElements_);
  place(shards, stride, full);
  place(shards + localElements_, stride, full + gradElements_);
}

} // namespace gptrt
