// The collectives of a data-parallel training step (see RankSync.h).
#include "runtime/train/RankSync.h"

#include "runtime/core/OptimizerShard.h"

#include "runtime/abi/manifest.pb.h"
#include "runtime/dist/Communicator.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gptrt::train {

namespace mf = gptc::manifest;

namespace {

/// Arena `index` as f32 elements. Every arena the collectives touch holds
/// f32 values; a size that is not a multiple of 4 means a broken manifest.
float *floats(const mf::Manifest &manifest, Context &ctx, int index,
              size_t &count) {
  uint64_t bytes = ctx.arenaSize(static_cast<size_t>(index));
  if (bytes % sizeof(float) != 0)
    throw std::runtime_error("arena '" + manifest.arenas(index).name() +
                             "' has " + std::to_string(bytes) +
                             " bytes, expected a multiple of 4 (f32 values): "
                             "the artifact is broken; rebuild it with gptc");
  count = bytes / sizeof(float);
  return static_cast<float *>(ctx.arenaBase(static_cast<size_t>(index)));
}

void allReduceArenas(dist::Communicator &comm, const mf::Manifest &manifest,
                     Context &ctx, mf::ArenaKind kind, bool max) {
  for (int i = 0; i < manifest.arenas_size(); ++i) {
    if (manifest.arenas(i).kind() != kind)
      continue;
    size_t n = 0;
    float *data = floats(manifest, ctx, i, n);
    if (max)
      comm.allReduceMax(data, n);
    else
      comm.allReduceSum(data, n);
  }
}

/// `values` of every rank, each split into a high and a low f32 so that the
/// doubles come back to within 2^-48 relative; result[rank][i].
std::vector<std::vector<double>> gatherDoubles(dist::Communicator &comm,
                                               const std::vector<double> &values) {
  const size_t n = values.size();
  std::vector<float> send(2 * n);
  for (size_t i = 0; i < n; ++i) {
    float hi = static_cast<float>(values[i]);
    send[2 * i] = hi;
    send[2 * i + 1] = static_cast<float>(values[i] - static_cast<double>(hi));
  }
  const size_t world = static_cast<size_t>(comm.worldSize());
  std::vector<float> all(2 * n * world);
  comm.allGather(send.data(), all.data(), 2 * n);
  std::vector<std::vector<double>> result(world, std::vector<double>(n));
  for (size_t r = 0; r < world; ++r)
    for (size_t i = 0; i < n; ++i)
      result[r][i] = static_cast<double>(all[2 * (r * n + i)]) +
                     static_cast<double>(all[2 * (r * n + i) + 1]);
  return result;
}

} // namespace

void allReduceGradients(dist::Communicator &comm, const mf::Manifest &manifest,
                        Context &ctx) {
  allReduceArenas(comm, manifest, ctx, mf::GRADS, /*max=*/false);
}

void allReduceFp8State(dist::Communicator &comm, const mf::Manifest &manifest,
                       Context &ctx) {
  allReduceArenas(comm, manifest, ctx, mf::FP8_STATE, /*max=*/true);
}

double sumOverRanks(dist::Communicator &comm, double local) {
  std::vector<std::vector<double>> all = gatherDoubles(comm, {local});
  double total = 0;
  for (const std::vector<double> &rank : all)
    total += rank[0];
  return total;
}

double globalMeanLoss(dist::Communicator &comm, double localLossSum,
                      int64_t microSteps) {
  return sumOverRanks(comm, localLossSum) /
         (static_cast<double>(microSteps) * comm.worldSize());
}

void reduceFp8Stats(dist::Communicator &comm, std::vector<Fp8CastStats> &stats) {
  std::vector<float> amax(stats.size());
  std::vector<double> counts;
  for (size_t i = 0; i < stats.size(); ++i) {
    amax[i] = stats[i].amax;
    counts.push_back(static_cast<double>(stats[i].underflow));
    counts.push_back(static_cast<double>(stats[i].saturated));
    counts.push_back(static_cast<double>(stats[i].elements));
  }
  comm.allReduceMax(amax.data(), amax.size());
  std::vector<std::vector<double>> all = gatherDoubles(comm, counts);
  for (size_t i = 0; i < stats.size(); ++i) {
    double sum[3] = {0, 0, 0};
    for (const std::vector<double> &rank : all)
      for (int k = 0; k < 3; ++k)
        sum[k] += rank[3 * i + k];
    stats[i].amax = amax[i];
    stats[i].underflow = std::llround(sum[0]);
    stats[i].saturated = std::llround(sum[1]);
    stats[i].elements = std::llround(sum[2]);
  }
}

void broadcastBytes(dist::Communicator &comm, std::string &bytes, int root) {
  // The length travels as one f32, exact below 2^24.
  constexpr size_t kMaxBytes = size_t(1) << 24;
  float length = static_cast<float>(bytes.size());
  if (comm.rank() == root && bytes.size() >= kMaxBytes)
    throw std::runtime_error("broadcastBytes: " + std::to_string(bytes.size()) +
                             " bytes, expected fewer than " +
                             std::to_string(kMaxBytes));
  comm.broadcast(&length, 1, root);
  // One byte per f32: slow for large data, exact, and only used for a
  // checkpoint index or a fingerprint.
  std::vector<float> values(static_cast<size_t>(length));
  if (comm.rank() == root)
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<unsigned char>(bytes[i]);
  comm.broadcast(values.data(), values.size(), root);
  bytes.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    bytes[i] = static_cast<char>(static_cast<unsigned char>(values[i]));
}

void broadcastPersistentArenas(dist::Communicator &comm,
                               const mf::Manifest &manifest, Context &ctx) {
  for (int i = 0; i < manifest.arenas_size(); ++i) {
    mf::ArenaKind kind = manifest.arenas(i).kind();
    if (kind != mf::PARAMS && kind != mf::OPTIMIZER && kind != mf::FP8_STATE)
      continue;
    size_t n = 0;
    float *data = floats(manifest, ctx, i, n);
    comm.broadcast(data, n, 0); // raw bytes: NaN payloads survive
  }
}

void checkSameRun(dist::Communicator &comm, const std::string &fingerprint) {
  std::string reference = fingerprint;
  broadcastBytes(comm, reference, 0);
  const int world = comm.worldSize();
  std::vector<float> differs(static_cast<size_t>(world), 0.0f);
  differs[static_cast<size_t>(comm.rank())] = reference == fingerprint ? 0 : 1;
  comm.allReduceSum(differs.data(), differs.size());
  std::string ranks;
  for (int r = 0; r < world; ++r)
    if (differs[static_cast<size_t>(r)] != 0)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  if (ranks.empty())
    return;
  // The first line that differs says what; only a differing rank knows it.
  std::string detail;
  if (reference != fingerprint) {
    std::istringstream mine(fingerprint), theirs(reference);
    std::string a, b;
    while (true) {
      bool moreA = static_cast<bool>(std::getline(mine, a));
      bool moreB = static_cast<bool>(std::getline(theirs, b));
      if (!moreA && !moreB)
        break;
      if (a != b || moreA != moreB) {
        detail = " (rank 0 has '" + (moreB ? b : std::string()) +
                 "', rank " + std::to_string(comm.rank()) + " has '" +
                 (moreA ? a : std::string()) + "')";
        break;
      }
    }
  }
  throw std::runtime_error(
      "rank(s) " + ranks + " run another artifact, other options or other "
      "data than rank 0" + detail +
      ": start every node with the same gptrun command, artifact and shards");
}

std::string gatherOptimizer(dist::Communicator &comm, const Context &ctx) {
  const OptimizerShard *shard = ctx.optimizerShard();
  if (shard == nullptr)
    throw std::logic_error("gatherOptimizer: the optimizer is not sharded");
  const size_t index = ctx.optimizerShardArena();
  const size_t local = 2 * static_cast<size_t>(shard->localElements());
  std::vector<float> mine(local), all(local * comm.worldSize());
  ctx.copyOut(mine.data(), ctx.arenaBase(index), local * sizeof(float));
  comm.allGather(mine.data(), all.data(), local);
  std::string full(2 * static_cast<size_t>(shard->gradElements()) * sizeof(float),
                   '\0');
  shard->assemble(all.data(), reinterpret_cast<float *>(full.data()));
  return full;
}

} // namespace gptrt::train
