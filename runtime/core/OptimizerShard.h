// Which gradient elements a rank owns under ZeRO-1 (gpt-data-parallel
// zero=1), and where their AdamW moments live in the rank's shard of the
// optimizer arena. Shared by the reduce-scatter of gradient buckets, the
// sharded kernels (global_norm_sharded, adamw_sharded, gather_params) and
// the conversion to and from the unsharded layout that checkpoints hold.
//
// Rule: a bucket of n elements is cut into `world` slices of
// ceil(n / world) elements; rank r owns slice r (the last ones may be short
// or empty). The shard keeps, bucket after bucket, one full slice length
// per bucket: all first moments, then all second moments.
#ifndef GPTRT_CORE_OPTIMIZERSHARD_H
#define GPTRT_CORE_OPTIMIZERSHARD_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gptc::manifest {
class Manifest;
}

namespace gptrt {

// Rank `rank`'s slice of a bucket of n elements: [begin, begin + count)
// relative to the bucket's start; `stride` is ceil(n / world).
struct BucketSlice {
  int64_t begin = 0, count = 0, stride = 0;
};
BucketSlice bucketSlice(int64_t n, int rank, int world);

class OptimizerShard {
public:
  // One owned run of gradient elements.
  struct Range {
    int64_t gradBegin = 0;   // element index in the grads arena
    int64_t count = 0;
    int64_t localBegin = 0;  // element index into this rank's first moments
  };

  // This rank's shard of a ZeRO-1 manifest (zero_stage 1, gradient
  // buckets). Throws std::invalid_argument for a manifest without buckets,
  // buckets outside the grads arena or overlapping ones, or a bad rank.
  OptimizerShard(const gptc::manifest::Manifest &manifest, int rank,
                 int world);

  int rank() const { return rank_; }
  int world() const { return world_; }
  // Elements of first moments this rank keeps (the same for second ones).
  int64_t localElements() const { return localElements_; }
  // Bytes of the sharded optimizer arena: both moments, 64-byte aligned.
  uint64_t optimizerBytes() const;
  // Owned runs in increasing gradient order (empty slices left out).
  const std::vector<Range> &owned() const { return owned_; }
  // Elements of the grads arena (f32) and of the unsharded optimizer's
  // moments each: the unsharded v starts at this element.
  int64_t gradElements() const { return gradElements_; }

  // Unsharded optimizer (m of every gradient element, then v) -> this rank's
  // shard, and this rank's shard -> its elements of an unsharded layout
  // (the rest of `full` is left as it is).
  void extract(const float *full, float *shard) const;
  void insert(const float *shard, float *full) const;
  // Every rank's owned elements into `full` (gradElements() floats, laid
  // out like the grads arena): rank r's values, in shard order (as its
  // first moments are), start at shards + r * stride.
  void place(const float *shards, size_t stride, float *full) const;
  // The copies place() makes: `count` floats from shards + from to
  // full + to, every rank's buckets in order.
  struct Placement {
    size_t from = 0, to = 0, count = 0;
  };
  std::vector<Placement> placements(size_t stride) const;
  // The unsharded optimizer layout from all ranks' shards, rank r's
  // 2 * localElements() floats at r * 2 * localElements().
  void assemble(const float *shards, float *full) const;

private:
  int rank_, world_;
  int64_t localElements_ = 0, gradElements_ = 0;
  std::vector<Range> owned_;
  struct Bucket {
    int64_t begin, elements, localBegin;
  };
  std::vector<Bucket> buckets_;
};

} // namespace gptrt

#endif // GPTRT_CORE_OPTIMIZERSHARD_H
