// gptrun as a launcher (see Launch.h).
#include "runtime/train/Launch.h"

#include "runtime/dist/Launcher.h"
#include "runtime/dist/Socket.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sched.h>
#include <stdexcept>
#include <thread>

namespace gptrt::train {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

bool has(const dist::Environment &env, const char *name) {
  return env.find(name) != env.end();
}

int availableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string selfExecutable() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("cannot find this gptrun's own path in "
                             "/proc/self/exe (" + ec.message() +
                             "): the launcher re-executes it as the workers; "
                             "mount /proc");
  return exe.string();
}

} // namespace

void checkLaunchFlags(const LaunchFlags &flags, const std::string &device) {
  if (flags.gpus && *flags.gpus < 1)
    throw std::runtime_error("--gpus " + std::to_string(*flags.gpus) +
                             ": expected at least 1 GPU worker per node");
  if (flags.gpus && flags.procs)
    throw std::runtime_error(
        "--gpus " + std::to_string(*flags.gpus) + " and --procs " +
        std::to_string(*flags.procs) +
        " both set the workers per node: use --gpus G for GPU workers or "
        "--device cpu --procs P for CPU workers");
  if (flags.gpus && device != "cuda")
    throw std::runtime_error("--gpus " + std::to_string(*flags.gpus) +
                             " starts GPU workers, but --device is " + device +
                             ": drop --device (or use --device cuda), or use "
                             "--procs for CPU workers");
  if (flags.procs && *flags.procs < 1)
    throw std::runtime_error("--procs " + std::to_string(*flags.procs) +
                             ": expected at least 1 CPU worker per node: use "
                             "--procs 1 for one process, more for data "
                             "parallelism");
  if (flags.procs && *flags.procs > 1 && device != "cpu")
    throw std::runtime_error("--procs " + std::to_string(*flags.procs) +
                             " starts CPU workers, but --device is " + device +
                             ": use --device cpu, or --gpus G for GPU workers");
  if (flags.nodes && *flags.nodes < 1)
    throw std::runtime_error("--nodes " + std::to_string(*flags.nodes) +
                             ": expected at least 1 node");
  if (flags.nodeRank && *flags.nodeRank < 0)
    throw std::runtime_error("--node-rank " + std::to_string(*flags.nodeRank) +
                             ": expected 0 for the first node, up to --nodes - 1");
  if (!(flags.timeoutSeconds > 0) || !std::isfinite(flags.timeoutSeconds))
    throw std::runtime_error(
        "--dist-timeout " + number(flags.timeoutSeconds) +
        ": expected a positive number of seconds (default 300), longer than "
        "any one rank's evaluation or checkpoint write");
  if (!flags.master.empty()) {
    std::string host;
    int port = 0;
    dist::parseMaster(flags.master, host, port);
  }
}

std::string defaultDevice(const LaunchFlags &flags, int usableGpus) {
  if (flags.gpus)
    return "cuda";
  if (flags.procs)
    return "cpu";
  return usableGpus > 0 ? "cuda" : "cpu";
}

Role chooseRole(const LaunchFlags &flags, const dist::Environment &env) {
  if (has(env, "RANK") || has(env, "WORLD_SIZE"))
    return Role::Worker;
  // --gpus always launches, even one worker: GPU workers pick their GPU
  // and talk NCCL, which a plain run does not.
  bool launcherFlags = flags.procs.value_or(1) > 1 || flags.gpus ||
                       flags.nodes.value_or(1) > 1 || flags.nodeRank ||
                       !flags.master.empty();
  if (has(env, "SLURM_PROCID") && has(env, "SLURM_NTASKS") && !launcherFlags) {
    // srun started the workers themselves; one task is a plain run.
    auto tasks = env.find("SLURM_NTASKS");
    return tasks->second == "1" ? Role::Single : Role::Worker;
  }
  return launcherFlags ? Role::Launcher : Role::Single;
}

int runLauncher(const LaunchFlags &flags, const TrainOptions &options,
                const std::vector<std::string> &arguments,
                const dist::Environment &baseEnv) {
  dist::LaunchOptions launch;
  launch.workersPerNode = flags.gpus.value_or(flags.procs.value_or(1));
  launch.nodes = flags.nodes.value_or(0);
  launch.nodeRank = flags.nodeRank.value_or(-1);
  if (!flags.master.empty())
    dist::parseMaster(flags.master, launch.masterAddr, launch.masterPort);
  dist::LaunchPlan plan = dist::planLaunch(launch, baseEnv);
  if (plan.nodes == 1 && flags.master.empty()) {
    // One machine: the store stays on loopback, on a port nobody uses.
    launch.masterAddr = "127.0.0.1";
    launch.masterPort = dist::freeLoopbackPort();
    plan = dist::planLaunch(launch, baseEnv);
  }
  // Bad input is reported here, once, rather than by every worker.
  checkTrainOptions(options, plan.worldSize,
                    plan.nodeRank * plan.workersPerNode);

  dist::Environment env = baseEnv;
  // Tells the workers they are GPU workers (each picks GPU LOCAL_RANK).
  if (flags.gpus)
    env[kGpuWorkersVariable] = std::to_string(*flags.gpus);
  // P workers each running as many BLAS threads as there are CPUs would
  // oversubscribe the machine P times over.
  if (!has(env, "OPENBLAS_NUM_THREADS"))
    env["OPENBLAS_NUM_THREADS"] =
        std::to_string(std::max(1, availableCpus() / plan.workersPerNode));
  launch.command.push_back(selfExecutable());
  launch.command.insert(launch.command.end(), arguments.begin(),
                        arguments.end());
  std::printf("gptrun: starting %d %s worker(s) on node %d of %d (world size "
              "%d), store at %s:%d, %s BLAS thread(s) each\n",
              plan.workersPerNode, flags.gpus ? "GPU" : "CPU", plan.nodeRank,
              plan.nodes, plan.worldSize,
              plan.masterAddr.c_str(), plan.masterPort,
              env["OPENBLAS_NUM_THREADS"].c_str());
  std::fflush(stdout);
  dist::LaunchResult result = dist::launch(launch, env);
  if (result.exitCode != 0) {
    std::fprintf(stderr, "gptrun: error: %s\n", result.summary.c_str());
    return result.exitCode;
  }
  return 0;
}

} // namespace gptrt::train
