// The training loop behind gptrun (see Trainer.h).
#include "runtime/train/Trainer.h"

#include "runtime/ckpt/Checkpoint.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/core/Params.h"
#include "runtime/data/Shards.h"
#include "runtime/train/Validation.h"

#include <chrono>
#include <cmath>
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

} // namespace

float train(const TrainOptions &o) {
  Artifact artifact(o.artifact);
  const auto &manifest = artifact.manifest();
  Context ctx(manifest, parseDevice(o.device));
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  const int64_t microTokens = B * T;
  const int64_t batchTokens = o.totalBatchTokens ? o.totalBatchTokens : microTokens;
  if (batchTokens % microTokens != 0)
    throw std::runtime_error(
        "--total-batch-tokens " + std::to_string(batchTokens) +
        " is not a multiple of one micro-batch, " + std::to_string(B) + " x " +
        std::to_string(T) + " = " + std::to_string(microTokens) +
        " tokens (compiled into " + o.artifact + "): use a multiple such as " +
        std::to_string((batchTokens / microTokens + 1) * microTokens));
  if (o.steps <= 0)
    throw std::runtime_error("--steps " + std::to_string(o.steps) +
                             " must be positive");
  const int64_t accumulation = batchTokens / microTokens;

  data::DataLoader loader(o.data, B, T);
  loader.checkVocabulary(manifest.model().vocab());
  std::unique_ptr<ValidationSet> validation;
  if (!o.valData.empty())
    validation = std::make_unique<ValidationSet>(o.valData, T, o.valTokens,
                                                 manifest.model().vocab());
  std::vector<ChoiceExample> choices;
  if (!o.choices.empty())
    choices = readChoiceFile(o.choices);
  if (o.samplesEvery < 0)
    throw std::runtime_error("--samples-every " +
                             std::to_string(o.samplesEvery) +
                             " must be >= 0 (0: no samples during training)");

  if (!o.ckptDir.empty())
    ckpt::checkWritable(o.ckptDir);
  if (o.fp8StatsEvery < 0)
    throw std::runtime_error("--fp8-stats-every " +
                             std::to_string(o.fp8StatsEvery) +
                             " must be >= 0 (0: no FP8 statistics)");
  if (o.fp8StatsEvery > 0 && manifest.fp8_stats_size() == 0)
    throw std::runtime_error(
        "--fp8-stats-every: " + o.artifact + " casts nothing to FP8 in "
        "train_step (compiled with --precision=" + manifest.precision() +
        "): compile it with an FP8 policy or drop the flag");

  initParams(manifest, ctx, o.seed);
  int64_t firstStep = 0;
  if (!o.resume.empty()) {
    if (o.resume == "latest" && o.ckptDir.empty())
      throw std::runtime_error("--resume without a path needs --ckpt-dir to "
                               "find the latest checkpoint in");
    std::string path =
        ckpt::resolve(o.resume == "latest" ? o.ckptDir : o.resume);
    gptc::checkpoint::Checkpoint state =
        ckpt::load(path, manifest, ctx, /*worldSize=*/1);
    firstStep = state.step();
    loader.restore({state.data_shard(), state.data_offset(), state.data_epoch()});
    std::printf("gptrun: resumed from %s at step %lld\n", path.c_str(),
                static_cast<long long>(firstStep));
  }
  namespace fs = std::filesystem;
  if (!o.dump.empty())
    exportParams(manifest, ctx, (fs::path(o.dump) / "init").string());

  std::ofstream log;
  if (!o.log.empty()) {
    // A resumed run appends to the log of the run it continues.
    log.open(o.log, firstStep > 0 ? std::ios::app : std::ios::trunc);
    log.precision(9);  // enough digits to tell any two f32 values apart
    if (!log)
      throw std::runtime_error("cannot write --log " + o.log +
                               ": choose a writable path");
  }
  const bool live = !o.quiet && isatty(STDOUT_FILENO);
  const int64_t printEvery = std::max<int64_t>(1, o.steps / 20);
  std::printf("gptrun: %s on %s, micro-batch %lld x %lld, %lld micro-step(s) "
              "per step, %lld steps, %lld parameters\n",
              manifest.model().name().c_str(), o.device.c_str(),
              static_cast<long long>(B), static_cast<long long>(T),
              static_cast<long long>(accumulation),
              static_cast<long long>(o.steps),
              static_cast<long long>(manifest.num_params()));
  // The per-GEMM table matters when a policy chose FP8 somewhere.
  if (!o.quiet && !manifest.precision_table().empty() &&
      manifest.precision_table().find("\n0 of ") == std::string::npos)
    std::printf("%s", manifest.precision_table().c_str());
  std::fflush(stdout);

  Clock::time_point start = Clock::now();
  float loss = NAN;
  for (int64_t step = firstStep; step < o.steps; ++step) {
    Clock::time_point stepStart = Clock::now();
    ctx.setLossScale(1.0f / static_cast<float>(accumulation));
    // Statistics cost a pass over each cast tensor: only on logging steps.
    bool fp8Stats = o.fp8StatsEvery > 0 && step % o.fp8StatsEvery == 0;
    if (fp8Stats)
      ctx.beginFp8Stats(manifest.fp8_stats_size());
    double lossSum = 0;
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      data::Batch batch = loader.next();
      writeBatch(ctx, manifest, EntryKind::TrainStep, batch.tokens.data(),
                 batch.targets.data(), B, T);
      artifact.run(EntryKind::TrainStep, ctx);
      lossSum += readScalarOutput(ctx, manifest, EntryKind::TrainStep, "loss");
    }
    loss = static_cast<float>(lossSum / accumulation);
    ctx.endFp8Stats();
    if (step == 0 && !o.dump.empty()) {
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
    double stepSeconds = secondsSince(stepStart);
    double tokensPerSecond = batchTokens / stepSeconds;
    if (!std::isfinite(loss))
      throw std::runtime_error("loss is " + std::to_string(loss) +
                               " at step " + std::to_string(step) +
                               ": lower --lr or check the data");

    bool last = step + 1 == o.steps;
    float valLoss = NAN;
    bool evaluating = (o.evalEvery > 0 && (step + 1) % o.evalEvery == 0) || last;
    if (validation && evaluating)
      valLoss = validationLoss(artifact, ctx, *validation);
    double choiceAccuracy = NAN;
    if (!choices.empty() && evaluating)
      choiceAccuracy = scoreChoices(artifact, ctx, choices, o.choicesLimit)
                           .accuracyNorm();

    std::string sampled;
    bool sampling = o.samplesEvery > 0 && (step + 1) % o.samplesEvery == 0 && !last;
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
    } else if (!o.quiet && (step % printEvery == 0 || last || evaluation[0])) {
      std::printf("%s%s\n", line, evaluation);
    }
    if (fp8Stats && !o.quiet && !live)
      std::printf("%s\n", fp8StatsSummary(manifest, ctx.fp8Stats()).c_str());
    if (sampling && !o.quiet)
      std::printf("%ssample at step %lld: %s\n", live ? "\n" : "",
                  static_cast<long long>(step + 1), sampled.c_str());
    std::fflush(stdout);
    if (log) {
      log << "{\"step\": " << step << ", \"loss\": " << loss
          << ", \"lr\": " << lr << ", \"grad_norm\": " << norm
          << ", \"tokens_per_s\": " << tokensPerSecond
          << ", \"step_ms\": " << stepSeconds * 1e3;
      if (!std::isnan(valLoss))
        log << ", \"val_loss\": " << valLoss;
      if (fp8Stats)
        log << ", \"fp8\": " << fp8StatsJson(manifest, ctx.fp8Stats());
      if (!std::isnan(choiceAccuracy))
        log << ", \"choices_acc_norm\": " << choiceAccuracy;
      if (sampling)
        log << ", \"sample\": \"" << jsonEscape(sampled) << "\"";
      log << "}\n";
      log.flush();
    }
    if (!o.ckptDir.empty() &&
        (last || (o.ckptEvery > 0 && (step + 1) % o.ckptEvery == 0))) {
      gptc::checkpoint::Checkpoint state;
      state.set_step(step + 1);
      state.set_world_size(1);
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
      std::string path = ckpt::save(o.ckptDir, manifest, ctx, state, o.keep);
      if (!o.quiet && !live)
        std::printf("checkpoint %s\n", path.c_str());
    }
  }
  if (live)
    std::printf("\n");
  if (!o.dump.empty())
    exportParams(manifest, ctx, (fs::path(o.dump) / "final").string());
  if (o.sample.tokens > 0) {
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
  ckpt::load(ckpt::resolve(checkpoint), artifact.manifest(), *ctx,
             /*worldSize=*/1);
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
