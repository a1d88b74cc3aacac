// The worker launcher behind `gptrun --gpus G` (torchrun semantics): forks
// G copies of a worker command on this node with RANK, LOCAL_RANK,
// WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT set
// (read back with readWorkerInfo, WorkerInfo.h), forwards their output line
// by line prefixed with "[rank R] ", and makes sure that any worker dying
// ends all of them with that worker's message instead of a hang.
//
// Where the node values come from, first match wins:
//   1. the explicit options (--nodes, --node-rank, --master);
//   2. Slurm, when srun started one launcher per node (SLURM_PROCID and
//      SLURM_NTASKS set): nodes = SLURM_NTASKS, node rank = SLURM_PROCID,
//      master = the first host of SLURM_STEP_NODELIST / SLURM_JOB_NODELIST;
//   3. one node, node rank 0, master 127.0.0.1.
// The master port defaults to 29500. srun with several tasks per node is
// refused here: each task would fork G workers; start the workers directly
// with srun instead (readWorkerInfo reads SLURM_* itself).
#ifndef GPTRT_DIST_LAUNCHER_H
#define GPTRT_DIST_LAUNCHER_H

#include "runtime/dist/WorkerInfo.h"

#include <chrono>
#include <string>
#include <vector>

namespace gptrt::dist {

struct LaunchOptions {
  // The worker's argv; command[0] is looked up in PATH.
  std::vector<std::string> command;
  int workersPerNode = 1; // G
  int nodes = 0;          // N; 0: Slurm or 1
  int nodeRank = -1;      // R; -1: Slurm or 0
  std::string masterAddr; // empty: Slurm or 127.0.0.1
  int masterPort = 0;     // 0: 29500
  // After the first failure the other workers get SIGTERM, and SIGKILL
  // when they are still alive this much later.
  std::chrono::milliseconds gracePeriod = std::chrono::seconds(10);
  // Where the workers' prefixed stdout and stderr lines go.
  int stdoutFd = 1;
  int stderrFd = 2;
};

// The resolved values for this node.
struct LaunchPlan {
  int nodes = 1;
  int nodeRank = 0;
  int workersPerNode = 1;
  int worldSize = 1;
  std::string masterAddr;
  int masterPort = kDefaultMasterPort;
};

// Applies the precedence above. Throws std::runtime_error naming the bad
// option or variable, what was expected and the fix.
LaunchPlan planLaunch(const LaunchOptions &options, const Environment &env);

// "HOST:PORT" as --master takes it. Throws std::runtime_error.
void parseMaster(const std::string &text, std::string &host, int &port);

// `base` plus the seven worker variables for local rank `localRank`.
Environment workerEnvironment(const LaunchPlan &plan, int localRank,
                              const Environment &base);

struct LaunchResult {
  // 0 when every worker exited 0; else the failing worker's exit code, or
  // 128 + signal number when it was killed by a signal (as shells report).
  int exitCode = 0;
  int failedRank = -1; // -1: none failed (or the launcher was interrupted)
  // One line for the user, e.g. `rank 1 exited with code 3 (last stderr
  // line: "loss is nan"); stopped the other 3 worker(s)`.
  std::string summary;
};

// Runs the workers of this node until all have exited. When one exits
// non-zero or is killed by a signal, the others get SIGTERM (and SIGCONT,
// so a stopped worker acts on it), then SIGKILL after the grace period; the
// first failure is the one reported. SIGINT,
// SIGTERM and SIGHUP sent to the launcher are passed on to the workers the
// same way. Workers get SIGKILL if the launcher itself dies (Linux
// PR_SET_PDEATHSIG: call this from a thread that outlives the workers).
// One launch per process at a time. Throws std::runtime_error when the
// plan is invalid or the workers cannot be started; a worker command that
// does not exist is reported as that worker exiting with code 127.
LaunchResult launch(const LaunchOptions &options,
                    const Environment &env = processEnvironment());

} // namespace gptrt::dist

#endif // GPTRT_DIST_LAUNCHER_H
