// gptrun's data-parallel flags and what they make of a gptrun process: a
// plain single-process run, the launcher of a node's workers (which
// re-executes gptrun once per worker through runtime/dist/Launcher.h), or
// one of those workers (told by its environment, WorkerInfo.h).
//
//   --procs P            CPU workers on this node (--device cpu)
//   --gpus G             G GPU workers on this node (NCCL), worker i on GPU i
//   --nodes N --node-rank R --master HOST:PORT   several nodes, torchrun's
//                        semantics: run one launcher per node, each with
//                        the same command and its own --node-rank
//   --dist-timeout S     how long any rank waits for the others
// One node without --master uses 127.0.0.1 and a free port. Under Slurm,
// srun may start one launcher per node (give --procs) or every worker
// itself (give no launcher flag: each task is a worker, WorkerInfo.h).
#ifndef GPTRT_TRAIN_LAUNCH_H
#define GPTRT_TRAIN_LAUNCH_H

#include "runtime/dist/WorkerInfo.h"
#include "runtime/train/Trainer.h"

#include <optional>
#include <string>
#include <vector>

namespace gptrt::train {

struct LaunchFlags {
  std::optional<int> procs; ///< --procs; unset: 1
  std::optional<int> gpus;  ///< --gpus
  std::optional<int> nodes;    ///< --nodes; unset: Slurm's or 1
  std::optional<int> nodeRank; ///< --node-rank; unset: Slurm's or 0
  std::string master;       ///< --master HOST:PORT; empty: see above
  double timeoutSeconds = 300; ///< --dist-timeout
};

enum class Role { Single, Launcher, Worker };

/// Checks the flags on their own (and against --device). Throws
/// std::runtime_error with one line naming the flag, the value, what was
/// expected and the fix (--gpus with --procs, or with a device other than
/// cuda, among them).
void checkLaunchFlags(const LaunchFlags &flags, const std::string &device);

/// The device when --device is not given: cuda for --gpus, and for one
/// process (or nodes of GPU workers) when this machine has a usable CUDA
/// device (`usableGpus`, e.g. cuda::usableDeviceCount()); cpu for --procs
/// (CPU workers) and where there is no GPU.
std::string defaultDevice(const LaunchFlags &flags, int usableGpus);

/// Set by the launcher in GPU workers' environment (the --gpus count): each
/// worker then takes GPU LOCAL_RANK of CUDA_VISIBLE_DEVICES (or of all).
inline constexpr const char *kGpuWorkersVariable = "GPTRT_GPU_WORKERS";

/// Worker when the environment says so (RANK or WORLD_SIZE set, or Slurm
/// tasks without launcher flags); Launcher when a flag asks for more than
/// one process on this node, several nodes or a master; else Single.
Role chooseRole(const LaunchFlags &flags, const dist::Environment &env);

/// Runs this node's workers: checks the training options once for the whole
/// job (checkTrainOptions), then starts gptrun (this executable) with
/// `arguments` (argv without argv[0]) once per worker, forwarding their
/// output prefixed with the rank. Workers get OPENBLAS_NUM_THREADS = CPUs /
/// workers unless it is set. Returns 0 when every worker succeeded, else the
/// failing worker's exit status after printing which rank failed and its
/// last error line. Throws std::runtime_error on bad flags or input.
int runLauncher(const LaunchFlags &flags, const TrainOptions &options,
                const std::vector<std::string> &arguments,
                const dist::Environment &env);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_LAUNCH_H
