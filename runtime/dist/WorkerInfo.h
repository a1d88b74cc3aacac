// Who this process is in a data-parallel job, read from the environment the
// launcher (Launcher.h) or Slurm's srun set up, with torchrun's variable
// names.
//
// Each value comes from the first of these that is set:
//   rank              RANK              SLURM_PROCID
//   local rank        LOCAL_RANK        SLURM_LOCALID
//   world size        WORLD_SIZE        SLURM_NTASKS
//   local world size  LOCAL_WORLD_SIZE  SLURM_NTASKS_PER_NODE, else this
//                                       node's count in SLURM_TASKS_PER_NODE
//   node rank         NODE_RANK         SLURM_NODEID
//   master address    MASTER_ADDR       the first host of SLURM_STEP_NODELIST
//                                       (or SLURM_JOB_NODELIST)
//   master port       MASTER_PORT       29500 under Slurm
// so workers forked by the launcher inside a Slurm job use the launcher's
// values, and workers started directly by `srun --ntasks-per-node=G` use
// Slurm's. Anything else missing, malformed or inconsistent is an error.
#ifndef GPTRT_DIST_WORKERINFO_H
#define GPTRT_DIST_WORKERINFO_H

#include <map>
#include <string>

namespace gptrt::dist {

// Environment variables by name; a map so tests can build one.
using Environment = std::map<std::string, std::string>;
Environment processEnvironment();

constexpr int kDefaultMasterPort = 29500;

struct WorkerInfo {
  int rank = 0;
  int localRank = 0;
  int worldSize = 1;
  int localWorldSize = 1;
  int nodeRank = 0;
  std::string masterAddr;
  int masterPort = 0;
};

// True when the environment describes a worker of a multi-process job:
// RANK, WORLD_SIZE or SLURM_PROCID is set.
bool isDistributedWorker(const Environment &env);

// Reads and checks the values above. Throws std::runtime_error naming the
// variable, its value, what was expected and the fix.
WorkerInfo readWorkerInfo(const Environment &env);

// The first host of a Slurm host list: "gpu[003-010,012],cpu1" -> "gpu003".
// Throws std::runtime_error for an empty or malformed list.
std::string firstSlurmHost(const std::string &nodeList);

// This node's task count from a SLURM_TASKS_PER_NODE value such as
// "4(x2),3" (4 tasks on nodes 0 and 1, 3 on node 2). Throws
// std::runtime_error when malformed or shorter than node + 1 entries.
int slurmTasksOnNode(const std::string &tasksPerNode, int node);

// A decimal integer in [min, max] from variable `name`; throws
// std::runtime_error naming the variable, the value and the range.
int parseIntVariable(const std::string &name, const std::string &value,
                     int min, int max);

} // namespace gptrt::dist

#endif // GPTRT_DIST_WORKERINFO_H
