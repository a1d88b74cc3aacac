// ZeRO-1's ownership rule (OptimizerShard) and the sharded optimizer
// kernels on one process: every gradient element of a bucket has exactly
// one owner, the shard layout round-trips with the unsharded one, and
// adamw_sharded over every rank's shard updates exactly what gptrt_adamw
// does unsharded, bit for bit.
#include "runtime/abi/gptrt.h"
#include "runtime/abi/manifest.pb.h"
#include "runtime/core/Context.h"
#include "runtime/core/OptimizerShard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace gptrt {
namespace {

namespace mf = gptc::manifest;
using ::testing::HasSubstr;

// A grads arena of `elements` floats with buckets {offset (elements), n}.
mf::Manifest zeroManifest(int64_t elements,
                          std::vector<std::pair<int64_t, int64_t>> buckets) {
  mf::Manifest m;
  auto add = [&](const char *name, mf::ArenaKind kind, int64_t floats) {
    mf::Arena *a = m.add_arenas();
    a->set_name(name);
    a->set_kind(kind);
    a->set_size(4 * floats);
    a->set_alignment(64);
  };
  add("params", mf::PARAMS, elements);
  add("grads", mf::GRADS, elements);
  add("optimizer", mf::OPTIMIZER, 2 * elements);
  for (size_t i = 0; i < buckets.size(); ++i) {
    mf::GradBucket *b = m.add_grad_buckets();
    b->set_bucket(static_cast<int64_t>(i));
    b->set_offset(4 * buckets[i].first);
    b->set_elements(buckets[i].second);
  }
  m.mutable_optimizer()->set_zero_stage(1);
  return m;
}

TEST(BucketSlice, CeilSlicesLastOnesShortOrEmpty) {
  BucketSlice s = bucketSlice(10, 3, 4);  // stride 3: 0-2, 3-5, 6-8, 9
  EXPECT_EQ(s.stride, 3);
  EXPECT_EQ(s.begin, 9);
  EXPECT_EQ(s.count, 1);
  s = bucketSlice(2, 3, 4);  // stride 1: ranks 2 and 3 own nothing
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(bucketSlice(0, 0, 2).stride, 0);
}

class ShardLayout : public ::testing::TestWithParam<int> {};

TEST_P(ShardLayout, EveryBucketElementHasOneOwnerAndRoundTrips) {
  const int world = GetParam();
  // Buckets out of order, a gap (alignment padding) between them, one
  // smaller than the world.
  const int64_t elements = 1200;
  mf::Manifest m = zeroManifest(elements, {{640, 555}, {0, 600}, {1196, 3}});
  std::vector<int> owners(elements, 0);
  std::vector<float> full(2 * elements), shards;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float &x : full)
    x = u(rng);
  int64_t local = -1;
  for (int rank = 0; rank < world; ++rank) {
    OptimizerShard shard(m, rank, world);
    if (local < 0)
      local = shard.localElements();
    EXPECT_EQ(shard.localElements(), local) << "every shard is the same size";
    EXPECT_EQ(shard.gradElements(), elements);
    for (const OptimizerShard::Range &r : shard.owned())
      for (int64_t i = 0; i < r.count; ++i)
        ++owners[r.gradBegin + i];
    std::vector<float> mine(2 * local);
    shard.extract(full.data(), mine.data());
    shards.insert(shards.end(), mine.begin(), mine.end());
    std::vector<float> back(2 * elements, 0.0f);
    shard.insert(mine.data(), back.data());
    for (const OptimizerShard::Range &r : shard.owned())
      for (int64_t i = 0; i < r.count; ++i) {
        ASSERT_EQ(back[r.gradBegin + i], full[r.gradBegin + i]);
        ASSERT_EQ(back[elements + r.gradBegin + i],
                  full[elements + r.gradBegin + i]);
      }
  }
  for (int64_t i = 0; i < elements; ++i) {
    bool inBucket = i < 600 || (i >= 640 && i < 1195) || (i >= 1196 && i < 1199);
    ASSERT_EQ(owners[i], inBucket ? 1 : 0) << "element " << i;
  }
  // Ceil slices: about 1/world of the moments each, never less.
  EXPECT_GE(local * world, 600 + 555 + 3);
  EXPECT_LE(local * world, 600 + 555 + 3 + 3 * (world - 1));
  std::vector<float> assembled(2 * elements, 0.0f);
  OptimizerShard(m, 0, world).assemble(shards.data(), assembled.data());
  for (int64_t i = 0; i < elements; ++i)
    if (owners[i]) {
      ASSERT_EQ(assembled[i], full[i]) << i;
      ASSERT_EQ(assembled[elements + i], full[elements + i]) << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShardLayout, ::testing::Values(1, 2, 3, 4, 7));

TEST(OptimizerShard, RefusesWhatItCannotShard) {
  mf::Manifest none = zeroManifest(16, {});
  EXPECT_THROW(OptimizerShard(none, 0, 2), std::invalid_argument);
  try {
    OptimizerShard(none, 0, 2);
  } catch (const std::invalid_argument &e) {
    EXPECT_THAT(e.what(), HasSubstr("gptc --zero=1"));
  }
  EXPECT_THROW(OptimizerShard(zeroManifest(16, {{8, 9}}), 0, 2),
               std::invalid_argument);  // past the arena
  EXPECT_THROW(OptimizerShard(zeroManifest(16, {{0, 9}, {8, 4}}), 0, 2),
               std::invalid_argument);  // overlap
  EXPECT_THROW(OptimizerShard(zeroManifest(16, {{0, 8}}), 2, 2),
               std::invalid_argument);  // rank out of range
}

// adamw_sharded on every rank's shard (each a Context with its own sharded
// optimizer arena) updates each element exactly as gptrt_adamw on the
// whole parameter, and global_norm_sharded's per-rank squares add up to
// global_norm's.
TEST(OptimizerShard, ShardedAdamWEqualsUnsharded) {
  const int64_t elements = 300;
  // Two parameters: [0, 200) and [208, 300), one bucket each.
  mf::Manifest m = zeroManifest(elements, {{0, 200}, {208, 92}});
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> params(elements), grads(elements), moments(2 * elements);
  for (float &x : params) x = u(rng);
  for (float &x : grads) x = u(rng);
  for (float &x : moments) x = std::fabs(u(rng)) * 0.01f;
  // Alignment padding between parameters: its gradient is always zero.
  std::fill(grads.begin() + 200, grads.begin() + 208, 0.0f);
  const float scale = 0.5f, lr = 1e-2f, step = 3.0f;
  auto update = [&](Context &ctx, float *p, float *opt) {
    gptrt_adamw_sharded(ctx.handle(), grads.data(), &scale, &lr, &step, p,
                        opt, 200, 0, elements, 0.9, 0.95, 1e-8, 0.1);
    gptrt_adamw_sharded(ctx.handle(), grads.data() + 208, &scale, &lr, &step,
                        p + 208, opt, 92, 208, elements, 0.9, 0.95, 1e-8, 0.0);
  };

  // Unsharded: the same as gptrt_adamw with m and v at their places.
  std::vector<float> want = params, wantMoments = moments;
  gptrt_adamw(Context(Device::Cpu, {}).handle(), grads.data(), &scale, &lr,
              &step, want.data(), wantMoments.data(), wantMoments.data() + elements,
              200, 0.9, 0.95, 1e-8, 0.1);
  {
    Context plain(Device::Cpu, {});
    gptrt_adamw(plain.handle(), grads.data() + 208, &scale, &lr, &step,
                want.data() + 208, wantMoments.data() + 208,
                wantMoments.data() + elements + 208, 92, 0.9, 0.95, 1e-8, 0.0);
  }
  {
    Context one(m);
    std::vector<float> p = params, opt = moments;
    update(one, p.data(), opt.data());
    ASSERT_FALSE(one.failed()) << one.error();
    EXPECT_EQ(p, want);
    EXPECT_EQ(opt, wantMoments);
  }

  const int world = 3;
  std::vector<float> got(elements, NAN);
  double squares = 0;
  for (int rank = 0; rank < world; ++rank) {
    Context ctx(m);
    std::memcpy(ctx.arenaBase(2), moments.data(), moments.size() * 4);
    OptimizerShard shard(m, rank, world);
    ctx.shardOptimizer(shard, 2);
    EXPECT_EQ(ctx.arenaSize(2), shard.optimizerBytes());
    EXPECT_TRUE(ctx.matches(m));
    std::vector<float> p = params;
    update(ctx, p.data(), static_cast<float *>(ctx.arenaBase(2)));
    ASSERT_FALSE(ctx.failed()) << ctx.error();
    std::vector<float> full(2 * elements, NAN);
    shard.insert(static_cast<const float *>(ctx.arenaBase(2)), full.data());
    for (const OptimizerShard::Range &r : shard.owned())
      for (int64_t i = r.gradBegin; i < r.gradBegin + r.count; ++i) {
        got[i] = p[i];
        ASSERT_EQ(full[i], wantMoments[i]) << "m " << i;
        ASSERT_EQ(full[elements + i], wantMoments[elements + i]) << "v " << i;
      }
    for (const OptimizerShard::Range &r : shard.owned())
      for (int64_t i = r.gradBegin; i < r.gradBegin + r.count; ++i)
        squares += double(grads[i]) * grads[i];
  }
  for (int64_t i = 0; i < elements; ++i)
    if (i < 200 || i >= 208)
      ASSERT_EQ(got[i], want[i]) << "parameter element " << i;

  // One rank with a shard of world 1 needs no exchange.
  Context solo(m);
  solo.shardOptimizer(OptimizerShard(m, 0, 1), 2);
  float norm = 0, full = 0;
  gptrt_global_norm_sharded(solo.handle(), grads.data(), &norm, elements);
  gptrt_global_norm(solo.handle(), grads.data(), &full, elements);
  ASSERT_FALSE(solo.failed()) << solo.error();
  EXPECT_EQ(norm, full);
  EXPECT_NEAR(std::sqrt(squares), full, 1e-6 * full);
  // Several ranks without an exchange is a runner bug, said as such.
  Context lonely(m);
  lonely.shardOptimizer(OptimizerShard(m, 1, 2), 2);
  gptrt_global_norm_sharded(lonely.handle(), grads.data(), &norm, elements);
  EXPECT_THAT(lonely.error(), HasSubstr("needs the gradient exchange set"));
}

} // namespace
} // namespace gptrt
