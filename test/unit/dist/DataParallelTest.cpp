// gptrun's data-parallel side (runtime/train): which role a process plays
// (chooseRole), the launcher flag checks, and the per-step collectives of
// RankSync.h over forked Gloo ranks -- gradient and FP8-state reductions on
// a context's arenas, the global mean loss, FP8 statistics, broadcasting a
// checkpoint index and arenas, and refusing ranks that run different jobs.
#include "runtime/abi/manifest.pb.h"
#include "runtime/core/Context.h"
#include "runtime/core/GradientFp8Scale.h"
#include "runtime/core/OptimizerShard.h"
#include "runtime/dist/Communicators.h"
#include "runtime/dist/Store.h"
#include "runtime/train/Launch.h"
#include "runtime/train/RankSync.h"
#include "runtime/train/Worker.h"
#include "test/unit/dist/ForkRanks.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/train/GradientBuckets.h"

#include <cmath>
#include <sstream>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace gptrt::train {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace mf = gptc::manifest;

#define EXPECT_THROWS_WITH(stmt, substring)                                    \
  do {                                                                         \
    try {                                                                      \
      stmt;                                                                    \
      ADD_FAILURE() << "no exception from " #stmt;                             \
    } catch (const std::exception &e) {                                        \
      EXPECT_THAT(e.what(), HasSubstr(substring));                             \
    }                                                                          \
  } while (0)

TEST(Role, FromEnvironmentAndFlags) {
  LaunchFlags none, two, nodes;
  two.procs = 2;
  nodes.nodes = 2;
  nodes.master = "10.0.0.1:29500";
  EXPECT_EQ(chooseRole(none, {}), Role::Single);
  EXPECT_EQ(chooseRole(two, {}), Role::Launcher);
  EXPECT_EQ(chooseRole(nodes, {}), Role::Launcher);
  LaunchFlags one;
  one.procs = 1;
  EXPECT_EQ(chooseRole(one, {}), Role::Single);
  // Workers re-executed by the launcher see its variables, whatever flags
  // they carry.
  EXPECT_EQ(chooseRole(two, {{"RANK", "1"}, {"WORLD_SIZE", "2"}}), Role::Worker);
  // srun started every task: each is a worker, unless there is one task.
  dist::Environment slurm{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}};
  EXPECT_EQ(chooseRole(none, slurm), Role::Worker);
  EXPECT_EQ(chooseRole(none, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}),
            Role::Single);
  // srun started one launcher per node.
  EXPECT_EQ(chooseRole(two, slurm), Role::Launcher);
}

TEST(LaunchFlags, DefaultDeviceIsTheGpuWhenThereIsOne) {
  LaunchFlags none;
  EXPECT_EQ(defaultDevice(none, 0), "cpu");
  EXPECT_EQ(defaultDevice(none, 1), "cuda");
  LaunchFlags procs;
  procs.procs = 2;
  EXPECT_EQ(defaultDevice(procs, 8), "cpu");  // --procs: CPU workers
  LaunchFlags gpus;
  gpus.gpus = 2;
  EXPECT_EQ(defaultDevice(gpus, 0), "cuda");  // refused later if none
}

TEST(LaunchFlags, BadValuesNameTheFix) {
  LaunchFlags f;
  f.procs = 0;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"),
                     "--procs 0: expected at least 1 CPU worker per node");
  f = {};
  f.gpus = 8;
  EXPECT_NO_THROW(checkLaunchFlags(f, "cuda"));
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"),
                     "--gpus 8 starts GPU workers, but --device is cpu");
  f.procs = 2;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cuda"), "both set the workers per node");
  f = {};
  f.gpus = 0;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cuda"), "--gpus 0: expected at least 1");
  f = {};
  f.procs = 2;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cuda"), "use --device cpu");
  f = {};
  f.timeoutSeconds = -1;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"), "--dist-timeout -1: expected a positive");
  f = {};
  f.nodes = 0;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"), "--nodes 0: expected at least 1");
  f = {};
  f.nodeRank = -2;
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"), "--node-rank -2");
  f = {};
  f.master = "node0";
  EXPECT_THROWS_WITH(checkLaunchFlags(f, "cpu"), "is not HOST:PORT");
  f = {};
  f.procs = 4;
  f.master = "node0:29500";
  EXPECT_NO_THROW(checkLaunchFlags(f, "cpu"));
}

TEST(Worker, GpuWorkerTakesItsEntryOfTheVisibleDevices) {
  EXPECT_EQ(gpuForWorker(0, 2, ""), "0");
  EXPECT_EQ(gpuForWorker(1, 2, ""), "1");
  EXPECT_EQ(gpuForWorker(1, 2, "4,6"), "6");
  EXPECT_EQ(gpuForWorker(0, 1, "GPU-8f2a"), "GPU-8f2a");  // UUIDs too
  EXPECT_THROWS_WITH(gpuForWorker(2, 3, "4,6"),
                     "GPU worker 2 of 3 has no GPU: CUDA_VISIBLE_DEVICES=4,6 "
                     "lists 2; use --gpus 2 or list more GPUs");
  // --gpus 2 launches local ranks 0 and 1; chooseRole launches even one.
  LaunchFlags one;
  one.gpus = 1;
  EXPECT_EQ(chooseRole(one, {}), Role::Launcher);
}

// Workers srun or torchrun started: GPU LOCAL_RANK of those visible, as
// torchrun's own workers take it; a launcher that bound one GPU per task
// keeps its choice.
TEST(Worker, LaunchedWorkerTakesGpuLocalRank) {
  EXPECT_EQ(gpuForLaunchedWorker(3, ""), std::optional<std::string>("3"));
  EXPECT_EQ(gpuForLaunchedWorker(1, "4,6"), std::optional<std::string>("6"));
  EXPECT_EQ(gpuForLaunchedWorker(5, "2"), std::nullopt);
  EXPECT_EQ(gpuForLaunchedWorker(0, "GPU-8f2a,GPU-77c1"),
            std::optional<std::string>("GPU-8f2a"));
  EXPECT_THROWS_WITH(gpuForLaunchedWorker(2, "4,6"),
                     "worker with LOCAL_RANK 2 has no GPU: "
                     "CUDA_VISIBLE_DEVICES=4,6 lists 2");
}

TEST(Worker, StoreBindsLoopbackOnlyForOneMachine) {
  EXPECT_EQ(storeBindAddress("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("localhost"), "127.0.0.1");
  EXPECT_EQ(storeBindAddress("10.1.2.3"), "0.0.0.0");
  EXPECT_EQ(storeBindAddress("node0"), "0.0.0.0");
}

/// A manifest with the arenas the collectives touch (sizes in floats).
mf::Manifest arenas(size_t params, size_t grads, size_t fp8) {
  mf::Manifest m;
  auto add = [&](const char *name, mf::ArenaKind kind, size_t floats) {
    mf::Arena *a = m.add_arenas();
    a->set_name(name);
    a->set_kind(kind);
    a->set_size(4 * floats);
    a->set_alignment(64);
  };
  add("activations", mf::ACTIVATIONS, 16);
  add("params", mf::PARAMS, params);
  add("grads", mf::GRADS, grads);
  add("optimizer", mf::OPTIMIZER, 2 * params);
  add("fp8_state", mf::FP8_STATE, fp8);
  return m;
}

float *arena(Context &ctx, size_t i) {
  return static_cast<float *>(ctx.arenaBase(i));
}

void check(bool ok, const std::string &what) {
  if (!ok)
    throw std::runtime_error(what);
}

std::unique_ptr<dist::Communicator> join(int rank, uint16_t port, int world,
                                         std::unique_ptr<dist::StoreClient> &store) {
  store = std::make_unique<dist::StoreClient>("127.0.0.1", port, rank, 20s);
  dist::GlooOptions options;
  options.timeout = 20s;
  return dist::makeGlooCommunicator(*store, rank, world, options);
}

// Every collective of a training step on `world` ranks; returns a digest
// that must be the same on every rank.
std::string stepCollectives(int rank, uint16_t port, int world) {
  std::unique_ptr<dist::StoreClient> store;
  auto comm = join(rank, port, world, store);
  const mf::Manifest m = arenas(5, 1000, 7);
  Context ctx(m, Device::Cpu);

  // Gradients: whole numbers, so the sum is exact in any order.
  for (size_t i = 0; i < 1000; ++i)
    arena(ctx, 2)[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 13) - 6);
  allReduceGradients(*comm, m, ctx);
  const float ranks = static_cast<float>(world * (world + 1) / 2);
  for (size_t i = 0; i < 1000; ++i)
    check(arena(ctx, 2)[i] == ranks * static_cast<float>(i % 13) - 6.0f * world,
          "gradient " + std::to_string(i) + " is " + std::to_string(arena(ctx, 2)[i]));
  // Only GRADS was summed.
  check(arena(ctx, 1)[0] == 0 && arena(ctx, 0)[0] == 0, "another arena changed");

  // FP8 amax histories: element-wise max, rank r's values peak at slot r.
  for (size_t i = 0; i < 7; ++i)
    arena(ctx, 4)[i] = i == static_cast<size_t>(rank) ? 100.0f + rank : 1.0f;
  allReduceFp8State(*comm, m, ctx);
  for (size_t i = 0; i < 7; ++i)
    check(arena(ctx, 4)[i] == (static_cast<int>(i) < world ? 100.0f + i : 1.0f),
          "amax history slot " + std::to_string(i));

  // Mean loss: sums of doubles that f32 cannot hold, and more micro-steps.
  const double local = 10.0 + rank / 3.0;
  double mean = globalMeanLoss(*comm, local, 2);
  double want = 0;
  for (int r = 0; r < world; ++r)
    want += 10.0 + r / 3.0;
  want /= 2.0 * world;
  check(std::abs(mean - want) < 1e-12 * want, "mean loss " + std::to_string(mean));

  // FP8 statistics: max of amax, sums of counts beyond f32's 2^24.
  std::vector<Fp8CastStats> stats(2);
  stats[0] = {static_cast<float>(rank), 0.5f, rank, 1, int64_t(1) << 30};
  stats[1] = {2.0f, 0.25f, 3, int64_t(20000001) + rank, 7};
  reduceFp8Stats(*comm, stats);
  check(stats[0].amax == world - 1 && stats[1].amax == 2.0f, "amax");
  check(stats[0].elements == (int64_t(1) << 30) * world, "element count");
  check(stats[1].saturated == 20000001LL * world + world * (world - 1) / 2,
        "saturated count " + std::to_string(stats[1].saturated));
  check(stats[0].underflow == world * (world - 1) / 2, "underflow count");

  // A checkpoint index and the persistent arenas from rank 0.
  std::string index = rank == 0 ? std::string("\0index\xff bytes", 13) : "";
  broadcastBytes(*comm, index, 0);
  check(index == std::string("\0index\xff bytes", 13), "broadcast bytes");
  for (size_t i = 0; i < 5; ++i)
    arena(ctx, 1)[i] = rank == 0 ? 1.5f * i : -1.0f;
  uint32_t nan = 0x7fc01234; // a NaN payload must arrive as it left
  if (rank == 0)
    std::memcpy(&arena(ctx, 3)[9], &nan, 4);
  broadcastPersistentArenas(*comm, m, ctx);
  for (size_t i = 0; i < 5; ++i)
    check(arena(ctx, 1)[i] == 1.5f * i, "broadcast parameter");
  check(std::memcmp(&arena(ctx, 3)[9], &nan, 4) == 0, "NaN payload");

  checkSameRun(*comm, "artifact 1\nsteps 10\n");
  return "ok " + std::to_string(mean);
}

class StepCollectives : public ::testing::TestWithParam<int> {};

TEST_P(StepCollectives, AgreeOnEveryRank) {
  const int world = GetParam();
  auto results = test::runRanks(world, [world](int rank, uint16_t port) {
    return stepCollectives(rank, port, world);
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].report;
    EXPECT_EQ(results[r].report, results[0].report);
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, StepCollectives, ::testing::Values(2, 3));

// The compiled step's gradient buckets (gpt-data-parallel) through the
// background exchange: f32 buckets sum exactly (whole numbers); FP8 buckets
// send each rank's E4M3 codes under one shared scale to each slice's owner,
// which sums them in f32 in rank order and sends the sums back as E4M3
// under a second shared scale, the same on every rank; an FP8 bucket of
// ZeRO-1 stops after the owner's sum; a step that starts a different
// number of buckets than grad_sync expects is an error.
std::string bucketExchange(int rank, uint16_t port, int world) {
  std::unique_ptr<dist::StoreClient> store;
  auto comm = join(rank, port, world, store);
  std::vector<float> a(1000), b(37);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 11) - 5);
  auto bValue = [](size_t i, int r) {
    return 0.001f * static_cast<float>(i) * (r + 1) - 0.01f;
  };
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = bValue(i, rank);
  std::vector<float> c = b;  // the same values, reduce-scattered as FP8
  {
    BackgroundGradientExchange exchange(*comm);
    exchange.start(a.data(), a.size(), 0, -1, false, nullptr);
    exchange.start(b.data(), b.size(), 1, GPTRT_FP8_E4M3, false, nullptr);
    exchange.start(c.data(), c.size(), 2, GPTRT_FP8_E4M3, true, nullptr);
    exchange.finish(3);
    const float ranks = static_cast<float>(world * (world + 1) / 2);
    for (size_t i = 0; i < a.size(); ++i)
      check(a[i] == ranks * static_cast<float>(i % 11) - 5.0f * world,
            "f32 bucket element " + std::to_string(i));
    // 1. Each rank's value rounded to E4M3 at the shared scale 448 / max |b|
    // over all ranks (rank world-1 holds the largest), summed in rank
    // order by the slice's owner.
    float amax = 0;
    for (size_t i = 0; i < b.size(); ++i)
      amax = std::max(amax, std::fabs(bValue(i, world - 1)));
    const float scale = gradientFp8Scale(amax);
    auto roundTrip = [](float v, float s) {
      return cpu::e4m3ToFloat(cpu::floatToE4M3(v * s)) / s;
    };
    std::vector<float> sums(b.size()), exact(b.size());
    float amaxOfSums = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      for (int r = 0; r < world; ++r) {
        sums[i] += roundTrip(bValue(i, r), scale);
        exact[i] += bValue(i, r);
      }
      amaxOfSums = std::max(amaxOfSums, std::fabs(sums[i]));
    }
    // 2. The sums rounded to E4M3 at 448 / max |sum|, on every rank.
    const float scaleOfSums = gradientFp8Scale(amaxOfSums);
    const BucketSlice mine = bucketSlice(static_cast<int64_t>(c.size()), rank,
                                         world);
    for (size_t i = 0; i < b.size(); ++i) {
      const float want = roundTrip(sums[i], scaleOfSums);
      check(b[i] == want, "fp8 bucket element " + std::to_string(i) + " is " +
                              std::to_string(b[i]) + ", expected " +
                              std::to_string(want));
      // E4M3 keeps 3 mantissa bits: each term and the sum within 2^-4 of
      // themselves, plus the subnormal step (2^-9 / scale) for small ones.
      check(std::fabs(b[i] - exact[i]) <=
                world * (std::fabs(exact[i]) / 16 + 0.002f / scale +
                         amax / 16) +
                    std::fabs(sums[i]) / 16 + 0.002f / scaleOfSums,
            "fp8 bucket element " + std::to_string(i) +
                " too far from the exact sum");
      // ZeRO-1: the owner's f32 sums in its slice, its own values elsewhere.
      const bool owned = static_cast<int64_t>(i) >= mine.begin &&
                         static_cast<int64_t>(i) < mine.begin + mine.count;
      const float wantC = owned ? sums[i] : bValue(i, rank);
      check(c[i] == wantC, "reduce-scattered fp8 bucket element " +
                               std::to_string(i) + " is " +
                               std::to_string(c[i]) + ", expected " +
                               std::to_string(wantC));
    }
    exchange.start(a.data(), a.size(), 0, -1, false, nullptr);
    try {
      exchange.finish(2);
      return "finish(2) after one bucket did not throw";
    } catch (const std::runtime_error &e) {
      check(std::string(e.what()).find("started 1 gradient buckets, train_step "
                                       "expected 2") != std::string::npos,
            std::string("unexpected error: ") + e.what());
    }
  }
  std::ostringstream digest;
  digest.precision(9);
  for (float v : b)
    digest << v << ' ';
  return digest.str();
}

class BucketExchange : public ::testing::TestWithParam<int> {};

TEST_P(BucketExchange, SumsF32AndFp8BucketsAlikeOnEveryRank) {
  const int world = GetParam();
  auto results = test::runRanks(world, [world](int rank, uint16_t port) {
    return bucketExchange(rank, port, world);
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].report;
    EXPECT_EQ(results[r].report, results[0].report);
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, BucketExchange, ::testing::Values(2, 3));

// ZeRO-1 through the exchange: reduce-scattered buckets leave the sums in
// this rank's slices (and its own values elsewhere), the norm's partial
// sums add up across ranks, the parameters each rank owns reach every
// rank, and the sharded moments assemble into the unsharded layout.
std::string shardedExchange(int rank, uint16_t port, int world) {
  std::unique_ptr<dist::StoreClient> store;
  auto comm = join(rank, port, world, store);
  // Buckets: 1001 elements at 0, 37 at 1024 (a gap of padding between).
  const int64_t elements = 1072;
  mf::Manifest m = arenas(elements, elements, 0);
  m.mutable_optimizer()->set_zero_stage(1);
  for (auto [bucket, offset, n] : {std::tuple{0, 0, 1001}, std::tuple{1, 1024, 37}}) {
    mf::GradBucket *b = m.add_grad_buckets();
    b->set_bucket(bucket);
    b->set_offset(4 * offset);
    b->set_elements(n);
  }
  auto value = [](int r, int64_t i) {
    return static_cast<float>((r + 1) * static_cast<int>(i % 13) - 6);
  };
  std::vector<float> grads(elements);
  for (int64_t i = 0; i < elements; ++i)
    grads[i] = value(rank, i);
  OptimizerShard shard(m, rank, world);
  BackgroundGradientExchange exchange(*comm);
  exchange.start(grads.data(), 1001, 0, -1, true, nullptr);
  exchange.start(grads.data() + 1024, 37, 1, -1, true, nullptr);
  exchange.finish(2);
  std::vector<bool> owned(elements, false);
  for (const OptimizerShard::Range &r : shard.owned())
    for (int64_t i = r.gradBegin; i < r.gradBegin + r.count; ++i)
      owned[i] = true;
  for (int64_t i = 0; i < elements; ++i) {
    float sum = 0;
    for (int r = 0; r < world; ++r)
      sum += value(r, i);
    check(grads[i] == (owned[i] ? sum : value(rank, i)),
          "gradient element " + std::to_string(i) + " is " +
              std::to_string(grads[i]) + (owned[i] ? " (owned)" : " (not owned)"));
  }

  check(exchange.sumOverRanks(rank + 0.25) ==
            world * (world - 1) / 2.0 + 0.25 * world,
        "sum over ranks");

  // Each rank holds the true value only where it owns the element.
  std::vector<float> params(elements, -1.0f);
  for (int64_t i = 0; i < elements; ++i)
    if (owned[i])
      params[i] = 0.5f * static_cast<float>(i);
  exchange.gatherParams(params.data(), shard);
  for (int64_t i = 0; i < elements; ++i) {
    bool inBucket = i < 1001 || (i >= 1024 && i < 1061);
    check(params[i] == (inBucket ? 0.5f * static_cast<float>(i) : -1.0f),
          "gathered parameter " + std::to_string(i));
  }

  // Moments: rank r's shard holds m = i and v = -i for the elements it owns.
  Context ctx(m);
  ctx.shardOptimizer(shard, 3);
  std::vector<float> local(2 * shard.localElements(), 0.0f);
  for (const OptimizerShard::Range &r : shard.owned())
    for (int64_t i = 0; i < r.count; ++i) {
      local[r.localBegin + i] = static_cast<float>(r.gradBegin + i);
      local[shard.localElements() + r.localBegin + i] =
          -static_cast<float>(r.gradBegin + i);
    }
  ctx.copyIn(ctx.arenaBase(3), local.data(), local.size() * 4);
  std::string full = gatherOptimizer(*comm, ctx);
  check(full.size() == 2 * elements * 4, "unsharded optimizer size");
  const float *f = reinterpret_cast<const float *>(full.data());
  for (int64_t i = 0; i < elements; ++i) {
    bool inBucket = i < 1001 || (i >= 1024 && i < 1061);
    check(f[i] == (inBucket ? static_cast<float>(i) : 0.0f) &&
              f[elements + i] == (inBucket ? -static_cast<float>(i) : 0.0f),
          "assembled moments of element " + std::to_string(i));
  }
  return "ok";
}

class ShardedExchange : public ::testing::TestWithParam<int> {};

TEST_P(ShardedExchange, ReduceScattersGathersAndAssembles) {
  const int world = GetParam();
  auto results = test::runRanks(world, [world](int rank, uint16_t port) {
    return shardedExchange(rank, port, world);
  });
  for (int r = 0; r < world; ++r)
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].report;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ShardedExchange, ::testing::Values(2, 3, 4));

TEST(CheckSameRun, EveryRankRefusesWithTheDifference) {
  auto results = test::runRanks(3, [](int rank, uint16_t port) -> std::string {
    std::unique_ptr<dist::StoreClient> store;
    auto comm = join(rank, port, 3, store);
    checkSameRun(*comm, rank == 2 ? "artifact 1\nsteps 20\n" : "artifact 1\nsteps 10\n");
    return "no error";
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].threw) << "rank " << r << ": " << results[r].report;
    EXPECT_THAT(results[r].report,
                HasSubstr("rank(s) 2 run another artifact, other options or "
                          "other data than rank 0"));
  }
  EXPECT_THAT(results[2].report,
              HasSubstr("(rank 0 has 'steps 10', rank 2 has 'steps 20')"));
}

TEST(RankSync, OneRankIsTheIdentity) {
  auto comm = dist::makeLocalCommunicator();
  const mf::Manifest m = arenas(3, 4, 2);
  Context ctx(m, Device::Cpu);
  arena(ctx, 2)[1] = 2.5f;
  allReduceGradients(*comm, m, ctx);
  EXPECT_EQ(arena(ctx, 2)[1], 2.5f);
  EXPECT_DOUBLE_EQ(globalMeanLoss(*comm, 7.0, 2), 3.5);
  std::string bytes = "abc";
  broadcastBytes(*comm, bytes, 0);
  EXPECT_EQ(bytes, "abc");
  EXPECT_NO_THROW(checkSameRun(*comm, "x"));
}

} // namespace
} // namespace gptrt::train
