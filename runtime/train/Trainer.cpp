// The training loop behind gptrun (see Trainer.h): one process, or one rank
// of a data-parallel job.
#include "runtime/train/Trainer.h"

#include "runtime/ckpt/Checkpoint.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/core/OptimizerShard.h"
#include "runtime/core/Params.h"
#include "runtime/cuda/Backend.h"
#include "runtime/data/Shards.h"
#include "runtime/dist/Communicators.h"
#include "runtime/train/GradientBuckets.h"
#include "runtime/train/Profile.h"
#include "runtime/train/RankSync.h"
#include "runtime/train/Validation.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace gptrt::train {

namespace {

/// A flag's value as the user would write it ("-0.001", "nan").
std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string duration(double seconds) {
  char text[32];
  long s = std::lround(seconds);
  if (s >= 3600)
    std::snprintf(text, sizeof(text), "%ldh%02ldm", s / 3600, s / 60 % 60);
  else
    std::snprintf(text, sizeof(text), "%ldm%02lds", s / 60, s % 60);
  return text;
}

/// `text` as the inside of a JSON string literal. Quotes become \u0022 so
/// that no `"key":` the plot's field scan looks for can appear in a sample.
std::string jsonEscape(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == '"') {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// The JSONL "fp8" object of one step: per cast (layer/gemm/operand) its
/// amax, scale and the fractions that underflowed to zero and saturated.
std::string fp8StatsJson(const gptc::manifest::Manifest &manifest,
                         const std::vector<Fp8CastStats> &stats) {
  std::ostringstream out;
  out.precision(6);
  out << "{";
  for (size_t i = 0; i < stats.size(); ++i) {
    const auto &info = manifest.fp8_stats(static_cast<int>(i));
    const Fp8CastStats &s = stats[i];
    double n = s.elements > 0 ? static_cast<double>(s.elements) : 1.0;
    out << (i ? ", " : "") << "\"" << info.layer() << "/" << info.gemm() << "/"
        << info.operand() << "\": {\"amax\": " << s.amax
        << ", \"scale\": " << s.scale << ", \"underflow\": " << s.underflow / n
        << ", \"saturated\": " << s.saturated / n << "}";
  }
  out << "}";
  return out.str();
}

/// One line for the console: the worst cast for underflow and saturation.
std::string fp8StatsSummary(const gptc::manifest::Manifest &manifest,
                            const std::vector<Fp8CastStats> &stats) {
  size_t under = 0, sat = 0;
  auto fraction = [](int64_t count, int64_t n) {
    return n > 0 ? static_cast<double>(count) / n : 0.0;
  };
  for (size_t i = 0; i < stats.size(); ++i) {
    if (fraction(stats[i].underflow, stats[i].elements) >
        fraction(stats[under].underflow, stats[under].elements))
      under = i;
    if (fraction(stats[i].saturated, stats[i].elements) >
        fraction(stats[sat].saturated, stats[sat].elements))
      sat = i;
  }
  auto name = [&](size_t i) {
    const auto &info = manifest.fp8_stats(static_cast<int>(i));
    return info.layer() + "/" + info.gemm() + "/" + info.operand();
  };
  char line[256];
  std::snprintf(line, sizeof(line),
                "  fp8: most underflow %.3f%% (%s), most saturation %.3f%% (%s)",
                100 * fraction(stats[under].underflow, stats[under].elements),
                name(under).c_str(),
                100 * fraction(stats[sat].saturated, stats[sat].elements),
                name(sat).c_str());
  return line;
}

/// What train() reads and checks before step 0; checkTrainOptions runs the
/// same code so that a launcher reports bad input once, before any worker.
struct Prepared {
  int64_t batchTokens = 0;  ///< global tokens per optimizer step
  int64_t accumulation = 0; ///< micro-steps per rank per step
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<ValidationSet> validation;
  std::vector<ChoiceExample> choices;
  std::string resumePath; ///< rank 0: the resolved checkpoint; else empty
};

Prepared prepare(const TrainOptions &o, const gptc::manifest::Manifest &manifest,
                 int rank, int world) {
  Prepared p;
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  const int64_t microTokens = B * T;
  // One micro-batch on every rank is the smallest step the job can take.
  const int64_t stepTokens = microTokens * world;
  p.batchTokens = o.totalBatchTokens ? o.totalBatchTokens : stepTokens;
  if (p.batchTokens < 0)
    throw std::runtime_error("--total-batch-tokens " +
                             std::to_string(p.batchTokens) +
                             " must be positive: use a multiple of " +
                             std::to_string(stepTokens));
  const std::string multiple =
      std::to_string((p.batchTokens / stepTokens + 1) * stepTokens);
  if (p.batchTokens % stepTokens != 0 && world == 1)
    throw std::runtime_error(
        "--total-batch-tokens " + std::to_string(p.batchTokens) +
        " is not a multiple of one micro-batch, " + std::to_string(B) + " x " +
        std::to_string(T) + " = " + std::to_string(microTokens) +
        " tokens (compiled into " + o.artifact + "): use a multiple such as " +
        multiple);
  if (p.batchTokens % stepTokens != 0)
    throw std::runtime_error(
        "--total-batch-tokens " + std::to_string(p.batchTokens) +
        " is not a multiple of one micro-batch on each of the " +
        std::to_string(world) + " workers, " + std::to_string(B) + " x " +
        std::to_string(T) + " x " + std::to_string(world) + " = " +
        std::to_string(stepTokens) + " tokens (" + std::to_string(B) + " x " +
        std::to_string(T) + " compiled into " + o.artifact +
        "): use a multiple such as " + multiple + ", or another worker count");
  if (o.steps <= 0)
    throw std::runtime_error("--steps " + std::to_string(o.steps) +
                             " must be positive");
  const Schedule &s = o.schedule;
  if (!std::isfinite(s.maxLr) || s.maxLr < 0)
    throw std::runtime_error("--lr " + number(s.maxLr) +
                             " must be a finite learning rate >= 0 (e.g. 6e-4)");
  if (!(s.minLrFraction >= 0 && s.minLrFraction <= 1))
    throw std::runtime_error("--min-lr-frac " + number(s.minLrFraction) +
                             " must be between 0 and 1 (the decay's floor as "
                             "a fraction of --lr)");
  if (s.warmupSteps < 0 || s.warmupSteps > o.steps)
    throw std::runtime_error("--warmup " + std::to_string(s.warmupSteps) +
                             " must be between 0 and --steps " +
                             std::to_string(o.steps) +
                             " (the learning rate would never reach --lr)");
  p.accumulation = p.batchTokens / stepTokens;

  p.loader = std::make_unique<data::DataLoader>(o.data, B, T, rank, world);
  p.loader->checkVocabulary(manifest.model().vocab());
  if (!o.valData.empty())
    p.validation = std::make_unique<ValidationSet>(o.valData, T, o.valTokens,
                                                   manifest.model().vocab());
  if (!o.choices.empty())
    p.choices = readChoiceFile(o.choices);
  if (o.samplesEvery < 0)
    throw std::runtime_error("--samples-every " +
                             std::to_string(o.samplesEvery) +
                             " must be >= 0 (0: no samples during training)");
  // Rank 0 alone writes checkpoints.
  if (!o.ckptDir.empty() && rank == 0)
    ckpt::checkWritable(o.ckptDir);
  if (o.fp8StatsEvery < 0)
    throw std::runtime_error("--fp8-stats-every " +
                             std::to_string(o.fp8StatsEvery) +
                             " must be >= 0 (0: no FP8 statistics)");
  if (o.profileStep < 0 || o.profileStep > o.steps)
    throw std::runtime_error("--profile-step " + std::to_string(o.profileStep) +
                             " must be between 1 and --steps " +
                             std::to_string(o.steps) + " (0: no profile)");
  if (o.fp8StatsEvery > 0 && manifest.fp8_stats_size() == 0)
    throw std::runtime_error(
        "--fp8-stats-every: " + o.artifact + " casts nothing to FP8 in "
        "train_step (compiled with --precision=" + manifest.precision() +
        "): compile it with an FP8 policy or drop the flag");

  if (!o.resume.empty()) {
    if (o.resume == "latest" && o.ckptDir.empty())
      throw std::runtime_error("--resume without a path needs --ckpt-dir to "
                               "find the latest checkpoint in");
    // Rank 0 reads the checkpoint and sends it to the others, so only its
    // node needs the files.
    if (rank == 0) {
      p.resumePath = ckpt::resolve(o.resume == "latest" ? o.ckptDir : o.resume);
      gptc::checkpoint::Checkpoint index = ckpt::readIndex(p.resumePath);
      // The rule of ckpt::load, checked here too so that a launcher refuses
      // before starting workers.
      if (index.world_size() != world)
        throw std::runtime_error(
            "checkpoint " + p.resumePath + " was written by " +
            std::to_string(index.world_size()) + " worker(s), this run has " +
            std::to_string(world) + ": resume with " +
            std::to_string(index.world_size()) +
            " worker(s) (gptrun --procs P --nodes N with P x N = " +
            std::to_string(index.world_size()) +
            "); on another world size the gradient sums and the data windows "
            "differ, so the run could not continue exactly");
    }
  }
  // An earlier run's checkpoints in --ckpt-dir: refused, or with
  // --overwrite removed, so that pruning and `latest` follow this run only.
  if (!o.ckptDir.empty() && rank == 0)
    for (const std::string &line :
         ckpt::claimDirectory(o.ckptDir, p.resumePath, o.overwrite))
      std::printf("gptrun: %s (--overwrite)\n", line.c_str());
  return p;
}

/// What must agree across ranks (RankSync.h checkSameRun), one item a line.
std::string runFingerprint(const TrainOptions &o,
                           const gptc::manifest::Manifest &manifest,
                           const Prepared &p) {
  std::ostringstream f;
  f.precision(17);
  int64_t shardTokens = 0;
  for (const data::ShardInfo &s : p.loader->shards())
    shardTokens += s.tokens;
  f << "artifact manifest hash " << ckpt::manifestHash(manifest) << "\n"
    << "device " << o.device << "\n"
    << "steps " << o.steps << "\n"
    << "total batch tokens " << p.batchTokens << "\n"
    << "learning rate " << o.schedule.maxLr << " floor "
    << o.schedule.minLrFraction << " warmup " << o.schedule.warmupSteps
    << " decay " << static_cast<int>(o.schedule.decay) << "\n"
    << "seed " << o.seed << "\n"
    << "training shards " << p.loader->shards().size() << " with "
    << shardTokens << " tokens\n"
    << "validation tokens " << (p.validation ? p.validation->tokens() : 0)
    << " every " << o.evalEvery << "\n"
    << "choices " << p.choices.size() << " limit " << o.choicesLimit << "\n"
    << "fp8 stats every " << o.fp8StatsEvery << "\n"
    << "profile step " << o.profileStep << "\n"
    << "resume " << (o.resume.empty() ? "no" : "yes") << "\n";
  return f.str();
}

/// Holds SIGTERM, SIGINT and SIGHUP while a checkpoint is written, and
/// delivers the first one afterwards: a launcher stopping the workers
/// (or a Ctrl-C) then ends the process after the checkpoint is complete,
/// not half-way through it. A handler, not a signal mask, because the
/// signal may be delivered to any thread (BLAS, Gloo).
class DeferTermination {
public:
  DeferTermination() {
    pending = 0;
    struct sigaction hold {};
    hold.sa_handler = [](int signal) {
      if (pending == 0)
        pending = signal;
    };
    sigemptyset(&hold.sa_mask);
    for (size_t i = 0; i < 3; ++i)
      ::sigaction(kSignals[i], &hold, &saved_[i]);
  }
  ~DeferTermination() {
    for (size_t i = 0; i < 3; ++i)
      ::sigaction(kSignals[i], &saved_[i], nullptr);
    if (pending != 0)
      ::raise(pending);
  }

private:
  static constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGHUP};
  static inline volatile std::sig_atomic_t pending = 0;
  struct sigaction saved_[3];
};

} // namespace

void checkTrainOptions(const TrainOptions &o, int worldSize, int rank) {
  Artifact artifact(o.artifact);
  parseDevice(o.device);
  prepare(o, artifact.manifest(), rank, worldSize);
}

float train(const TrainOptions &o) {
  std::unique_ptr<dist::Communicator> comm = dist::makeLocalCommunicator();
  return train(o, *comm);
}

float train(const TrainOptions &o, dist::Communicator &comm) {
  const int rank = comm.rank(), world = comm.worldSize();
  // Rank 0 alone prints, logs, dumps, samples and writes checkpoints.
  const bool lead = rank == 0;
  Artifact artifact(o.artifact);
  const auto &manifest = artifact.manifest();
  Context ctx(manifest, parseDevice(o.device));
  ctx.setCudaGraphs(o.cudaGraphs);
  if (cuda::Device *gpu = ctx.cudaDevice()) {
    gpu->setFlashAttention(o.flashAttention);
    gpu->setRowwiseOuterVecScales(o.rowwiseOuterVec);
  }
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  Prepared prepared = prepare(o, manifest, rank, world);
  const int64_t batchTokens = prepared.batchTokens;
  const int64_t accumulation = prepared.accumulation;
  data::DataLoader &loader = *prepared.loader;
  const std::unique_ptr<ValidationSet> &validation = prepared.validation;
  const std::vector<ChoiceExample> &choices = prepared.choices;
  if (world > 1)
    checkSameRun(comm, runFingerprint(o, manifest, prepared));

  initParams(manifest, ctx, o.seed);
  int64_t firstStep = 0;
  if (!o.resume.empty()) {
    gptc::checkpoint::Checkpoint state;
    std::string index;
    if (lead) {
      state = ckpt::load(prepared.resumePath, manifest, ctx, world);
      state.SerializeToString(&index);
    }
    if (world > 1) {
      broadcastBytes(comm, index, 0);
      broadcastPersistentArenas(comm, manifest, ctx);
      if (!lead && !state.ParseFromString(index))
        throw std::runtime_error("rank " + std::to_string(rank) +
                                 " received a checkpoint index from rank 0 "
                                 "that does not parse: a gptrun version "
                                 "mismatch between nodes; use one build");
    }
    firstStep = state.step();
    loader.restore({state.data_shard(), state.data_offset(), state.data_epoch()});
    if (lead)
      std::printf("gptrun: resumed from %s at step %lld\n",
                  prepared.resumePath.c_str(),
                  static_cast<long long>(firstStep));
  }
  // ZeRO-1: each rank keeps the moments of its gradient slices only, cut
  // from the unsharded arena just restored (the same on every rank).
  const bool zero = manifest.optimizer().zero_stage() == 1 && world > 1;
  if (zero) {
    for (int i = 0; i < manifest.arenas_size(); ++i)
      if (manifest.arenas(i).kind() == gptc::manifest::OPTIMIZER)
        ctx.shardOptimizer(OptimizerShard(manifest, rank, world),
                           static_cast<size_t>(i));
  }
  namespace fs = std::filesystem;
  const bool dumping = lead && !o.dump.empty();
  if (dumping)
    exportParams(manifest, ctx, (fs::path(o.dump) / "init").string());

  std::ofstream log;
  if (lead && !o.log.empty()) {
    // A resumed run appends to the log of the run it continues.
    log.open(o.log, firstStep > 0 ? std::ios::app : std::ios::trunc);
    log.precision(9);  // enough digits to tell any two f32 values apart
    if (!log)
      throw std::runtime_error("cannot write --log " + o.log +
                               ": choose a writable path");
  }
  const bool quiet = o.quiet || !lead;
  const bool live = !quiet && isatty(STDOUT_FILENO);
  const int64_t printEvery = std::max<int64_t>(1, o.steps / 20);
  if (lead) {
    std::string workers =
        world > 1 ? ", " + std::to_string(world) + " workers (" +
                        comm.backend() + ")"
                  : "";
    std::printf("gptrun: %s on %s%s, micro-batch %lld x %lld, %lld micro-step(s) "
                "per step%s, %lld steps, %lld parameters\n",
                manifest.model().name().c_str(), o.device.c_str(),
                workers.c_str(), static_cast<long long>(B),
                static_cast<long long>(T),
                static_cast<long long>(accumulation),
                world > 1 ? " on each" : "", static_cast<long long>(o.steps),
                static_cast<long long>(manifest.num_params()));
    // The per-GEMM table matters when a policy chose FP8 somewhere.
    if (!o.quiet && !manifest.precision_table().empty() &&
        manifest.precision_table().find("\n0 of ") == std::string::npos)
      std::printf("%s", manifest.precision_table().c_str());
    std::fflush(stdout);
  }

  // An artifact compiled with gpt-data-parallel sums its gradient buckets
  // itself, during the last micro-step's backward; others get the whole
  // gradient arena summed after the micro-steps.
  // Across ranks, and on a GPU worker alone too, so that `gptrun --gpus 1`
  // runs (and times) the NCCL path that several GPUs take.
  const bool communicating = world > 1 || comm.deviceStream() != nullptr;
  std::unique_ptr<BackgroundGradientExchange> exchange;
  const bool bucketed = manifest.grad_buckets_size() > 0;
  if (communicating && bucketed) {
    // A GPU worker's buckets stay on the device, worked on in the
    // communicator's stream.
    cuda::Device *gpu = ctx.cudaDevice();
    exchange = std::make_unique<BackgroundGradientExchange>(
        comm, gpu ? deviceBucketMemory(*gpu, comm.deviceStream())
                  : hostBucketMemory());
    ctx.setGradientExchange(exchange.get());
  }
  struct Detach {
    Context &ctx;
    ~Detach() { ctx.setGradientExchange(nullptr); }
  } detach{ctx};

  Clock::time_point start = Clock::now();
  float loss = NAN;
  for (int64_t step = firstStep; step < o.steps; ++step) {
    Clock::time_point stepStart = Clock::now();
    // Summed over micro-steps and then over ranks, the gradients are the
    // mean over the global batch.
    ctx.setLossScale(1.0f / static_cast<float>(accumulation * world));
    // Statistics cost a pass over each cast tensor: only on logging steps.
    bool fp8Stats = o.fp8StatsEvery > 0 && step % o.fp8StatsEvery == 0;
    if (fp8Stats)
      ctx.beginFp8Stats(manifest.fp8_stats_size());
    // Timed from the first micro-step through the optimizer step.
    const bool profiled = step + 1 == o.profileStep;
    if (profiled)
      ctx.beginProfile();
    double lossSum = 0;
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      ctx.setLastMicroStep(micro + 1 == accumulation);
      data::Batch batch = loader.next();
      writeBatch(ctx, manifest, EntryKind::TrainStep, batch.tokens.data(),
                 batch.targets.data(), B, T);
      artifact.run(EntryKind::TrainStep, ctx);
      lossSum += readScalarOutput(ctx, manifest, EntryKind::TrainStep, "loss");
    }
    ctx.endFp8Stats();
    // Communication on this thread (blocking) plus the exchange's: what a
    // step spends communicating, and how much of it the backward hid.
    double commSeconds = 0, exposedSeconds = 0;
    if (communicating) {
      Clock::time_point commStart = Clock::now();
      if (!bucketed)
        allReduceGradients(comm, manifest, ctx);
      allReduceFp8State(comm, manifest, ctx);
      loss = static_cast<float>(globalMeanLoss(comm, lossSum, accumulation));
      if (fp8Stats)
        reduceFp8Stats(comm, ctx.fp8Stats());
      commSeconds = exposedSeconds = secondsSince(commStart);
    } else {
      loss = static_cast<float>(lossSum / accumulation);
    }
    if (step == 0 && dumping) {
      exportParams(manifest, ctx, (fs::path(o.dump) / "grads0").string(),
                   ParamBuffer::Grad);
      std::ofstream(fs::path(o.dump) / "loss0.txt") << std::hexfloat << loss
                                                     << "\n";
    }
    double lr = o.schedule.at(step);
    ctx.setLearningRate(static_cast<float>(lr));
    ctx.setStep(step + 1);
    artifact.run(EntryKind::OptimizerStep, ctx);
    float norm = readScalarOutput(ctx, manifest, EntryKind::OptimizerStep,
                                  "grad_norm");
    std::vector<ProfileRow> profile;
    if (profiled)
      profile = summariseProfile(ctx.endProfile());
    double stepSeconds = secondsSince(stepStart);
    if (exchange) {
      BackgroundGradientExchange::Timing t = exchange->takeTiming();
      commSeconds += t.busySeconds;
      exposedSeconds += t.exposedSeconds;
    }
    double tokensPerSecond = batchTokens / stepSeconds;
    // The loss is the same on every rank, so every rank stops here.
    if (!std::isfinite(loss))
      throw std::runtime_error("loss is " + std::to_string(loss) +
                               " at step " + std::to_string(step) +
                               ": lower --lr or check the data");

    bool last = step + 1 == o.steps;
    // Every rank evaluates its share (the parameters are the same
    // everywhere) and the sums are combined: each result on every rank.
    float valLoss = NAN;
    bool evaluating = (o.evalEvery > 0 && (step + 1) % o.evalEvery == 0) || last;
    if (validation && evaluating)
      valLoss = validationLoss(artifact, ctx, *validation,
                               world > 1 ? &comm : nullptr);
    double choiceAccuracy = NAN;
    if (!choices.empty() && evaluating)
      choiceAccuracy = scoreChoices(artifact, ctx, choices, o.choicesLimit,
                                    world > 1 ? &comm : nullptr)
                           .accuracyNorm();

    std::string sampled;
    bool sampling =
        lead && o.samplesEvery > 0 && (step + 1) % o.samplesEvery == 0 && !last;
    if (sampling) {
      // Each sample draws from its own stream, so resuming changes nothing.
      SampleOptions options = o.sample;
      options.tokens = o.sample.tokens > 0 ? o.sample.tokens : 32;
      options.seed = o.sample.seed + static_cast<uint64_t>(step + 1);
      sampled = sample(artifact, ctx, options);
    }

    double elapsed = secondsSince(start);
    double eta = elapsed / (step + 1 - firstStep) * (o.steps - step - 1);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "step %lld/%lld | loss %.4f | lr %.2e | norm %.3f | "
                  "%.0f tok/s | %.1f GFLOP/s | ETA %s",
                  static_cast<long long>(step + 1),
                  static_cast<long long>(o.steps), loss, lr, norm,
                  tokensPerSecond,
                  tokensPerSecond * manifest.flops_per_token() / 1e9,
                  duration(eta).c_str());
    char evaluation[96] = "";
    if (!std::isnan(valLoss))
      std::snprintf(evaluation, sizeof(evaluation), " | val loss %.4f", valLoss);
    if (!std::isnan(choiceAccuracy))
      std::snprintf(evaluation + std::strlen(evaluation),
                    sizeof(evaluation) - std::strlen(evaluation),
                    " | choices acc_norm %.4f", choiceAccuracy);
    if (live) {
      std::printf("\r%s\033[K", line);
      if (evaluation[0])
        std::printf("\n %s\n", evaluation + 2);
    } else if (!quiet && (step % printEvery == 0 || last || evaluation[0])) {
      std::printf("%s%s\n", line, evaluation);
    }
    if (fp8Stats && !quiet && !live)
      std::printf("%s\n", fp8StatsSummary(manifest, ctx.fp8Stats()).c_str());
    if (sampling && !quiet)
      std::printf("%ssample at step %lld: %s\n", live ? "\n" : "",
                  static_cast<long long>(step + 1), sampled.c_str());
    // Asked for by name: printed even when quiet, by the first rank.
    if (profiled && lead)
      std::printf(
          "%s%s", live ? "\n" : "",
          profileTable(profile, step + 1, ctx.cudaDevice() != nullptr).c_str());
    std::fflush(stdout);
    if (log) {
      log << "{\"step\": " << step << ", \"loss\": " << loss
          << ", \"lr\": " << lr << ", \"grad_norm\": " << norm
          << ", \"tokens_per_s\": " << tokensPerSecond
          << ", \"step_ms\": " << stepSeconds * 1e3;
      if (communicating)
        log << ", \"comm_ms\": " << commSeconds * 1e3
            << ", \"comm_exposed_ms\": " << exposedSeconds * 1e3;
      if (!std::isnan(valLoss))
        log << ", \"val_loss\": " << valLoss;
      if (fp8Stats)
        log << ", \"fp8\": " << fp8StatsJson(manifest, ctx.fp8Stats());
      if (!std::isnan(choiceAccuracy))
        log << ", \"choices_acc_norm\": " << choiceAccuracy;
      if (sampling)
        log << ", \"sample\": \"" << jsonEscape(sampled) << "\"";
      // Its step_ms includes the timing and the eager (graph-less) run.
      if (profiled)
        log << ", \"profiled\": true, \"profile\": " << profileJson(profile);
      log << "}\n";
      log.flush();
    }
    const bool saving =
        !o.ckptDir.empty() &&
        (last || (o.ckptEvery > 0 && (step + 1) % o.ckptEvery == 0));
    // Every rank holds a piece of the moments: all take part in gathering.
    std::string unshardedOptimizer;
    if (saving && zero)
      unshardedOptimizer = gatherOptimizer(comm, ctx);
    if (lead && saving) {
      gptc::checkpoint::Checkpoint state;
      state.set_step(step + 1);
      // Every rank's parameters, moments and FP8 state are the same (the
      // gradients and amax histories were reduced), so rank 0's are the
      // job's; the data position is global too.
      state.set_world_size(world);
      data::Position at = loader.position();
      state.set_data_shard(at.shard);
      state.set_data_offset(at.offset);
      state.set_data_epoch(at.epoch);
      auto *config = state.mutable_config();
      config->set_total_steps(o.steps);
      config->set_total_batch_tokens(batchTokens);
      config->set_max_lr(o.schedule.maxLr);
      config->set_min_lr_fraction(o.schedule.minLrFraction);
      config->set_warmup_steps(o.schedule.warmupSteps);
      config->set_seed(o.seed);
      config->set_data(o.data);
      std::string path;
      {
        DeferTermination hold;
        path = ckpt::save(o.ckptDir, manifest, ctx, state, o.keep,
                          unshardedOptimizer);
      }
      if (!quiet && !live)
        std::printf("checkpoint %s\n", path.c_str());
    }
  }
  if (live)
    std::printf("\n");
  if (dumping)
    exportParams(manifest, ctx, (fs::path(o.dump) / "final").string());
  if (lead && o.sample.tokens > 0) {
    std::printf("sample (%lld tokens, temperature %.2f, top-k %lld):\n%s\n",
                static_cast<long long>(o.sample.tokens), o.sample.temperature,
                static_cast<long long>(o.sample.topK),
                sample(artifact, ctx, o.sample).c_str());
    std::fflush(stdout);
  }
  return loss;
}

namespace {

/// A context holding `checkpoint`'s parameters for `artifact`.
std::unique_ptr<Context> restore(const Artifact &artifact,
                                 const std::string &checkpoint) {
  auto ctx = std::make_unique<Context>(artifact.manifest());
  // Evaluating or sampling does not continue the run: a checkpoint of any
  // world size will do (the parameters are the same on every rank).
  std::string path = ckpt::resolve(checkpoint);
  ckpt::load(path, artifact.manifest(), *ctx,
             static_cast<int>(ckpt::readIndex(path).world_size()));
  return ctx;
}

} // namespace

float evaluateCheckpoint(const std::string &path, const std::string &checkpoint,
                         const std::string &valData, int64_t valTokens) {
  Artifact artifact(path);
  ValidationSet set(valData, artifact.manifest().seq(), valTokens,
                    artifact.manifest().model().vocab());
  std::unique_ptr<Context> ctx = restore(artifact, checkpoint);
  return validationLoss(artifact, *ctx, set);
}

ChoiceScore scoreCheckpointChoices(const std::string &path,
                                   const std::string &checkpoint,
                                   const std::string &file, int64_t limit) {
  Artifact artifact(path);
  std::vector<ChoiceExample> examples = readChoiceFile(file);
  std::unique_ptr<Context> ctx = restore(artifact, checkpoint);
  return scoreChoices(artifact, *ctx, examples, limit);
}

std::string sampleCheckpoint(const std::string &path,
                             const std::string &checkpoint,
                             const SampleOptions &options) {
  Artifact artifact(path);
  std::unique_ptr<Context> ctx = restore(artifact, checkpoint);
  return sample(artifact, *ctx, options);
}

void exportInitialParams(const std::string &path, uint64_t seed,
                         const std::string &dir) {
  Artifact artifact(path);
  Context ctx(artifact.manifest());
  initParams(artifact.manifest(), ctx, seed);
  exportParams(artifact.manifest(), ctx, dir);
}

} // namespace gptrt::train
