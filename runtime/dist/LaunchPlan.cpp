// Resolving where this node sits in the job (options, then Slurm, then
// defaults: see Launcher.h) and the environment each worker gets.
#include "runtime/dist/Launcher.h"

#include <climits>
#include <stdexcept>

namespace gptrt::dist {

void parseMaster(const std::string &text, std::string &host, int &port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::runtime_error("--master '" + text +
                             "' is not HOST:PORT: give node 0's address and a "
                             "free port, e.g. 10.0.0.1:29500");
  host = text.substr(0, colon);
  const std::string digits = text.substr(colon + 1);
  bool valid = digits.size() <= 5 &&
               digits.find_first_not_of("0123456789") == std::string::npos;
  port = valid ? std::stoi(digits) : 0;
  if (port < 1 || port > 65535)
    throw std::runtime_error("--master '" + text + "' has port '" + digits +
                             "', expected an integer in [1, 65535]: give a "
                             "free port on node 0, e.g. " + host + ":29500");
}

LaunchPlan planLaunch(const LaunchOptions &options, const Environment &env) {
  auto lookup = [&](const char *name) -> const std::string * {
    auto it = env.find(name);
    return it == env.end() ? nullptr : &it->second;
  };
  LaunchPlan plan;
  if (options.workersPerNode < 1)
    throw std::runtime_error("--gpus " + std::to_string(options.workersPerNode) +
                             ": expected at least 1 worker per node");
  plan.workersPerNode = options.workersPerNode;

  const std::string *slurmRank = lookup("SLURM_PROCID");
  const std::string *slurmTasks = lookup("SLURM_NTASKS");
  const bool slurm = slurmRank && slurmTasks;
  int slurmNodes = 0;
  if (slurm) {
    int tasks = parseIntVariable("SLURM_NTASKS", *slurmTasks, 1, INT_MAX);
    const std::string *nodes = lookup("SLURM_STEP_NUM_NODES");
    if (!nodes)
      nodes = lookup("SLURM_NNODES");
    if (nodes && (options.nodes == 0 || options.nodeRank < 0)) {
      int n = parseIntVariable("SLURM_NNODES", *nodes, 1, INT_MAX);
      if (tasks > n)
        throw std::runtime_error(
            "srun started SLURM_NTASKS=" + std::to_string(tasks) +
            " tasks on " + std::to_string(n) +
            " node(s), and each launcher would fork --gpus " +
            std::to_string(plan.workersPerNode) +
            " workers: run srun with --ntasks-per-node=1, or let srun start "
            "the workers themselves");
    }
    slurmNodes = tasks;
  }

  if (options.nodes > 0)
    plan.nodes = options.nodes;
  else if (options.nodes < 0)
    throw std::runtime_error("--nodes " + std::to_string(options.nodes) +
                             ": expected at least 1");
  else
    plan.nodes = slurm ? slurmNodes : 1;

  if (options.nodeRank >= 0)
    plan.nodeRank = options.nodeRank;
  else
    plan.nodeRank =
        slurm ? parseIntVariable("SLURM_PROCID", *slurmRank, 0, INT_MAX) : 0;
  if (plan.nodeRank >= plan.nodes)
    throw std::runtime_error(
        "node rank " + std::to_string(plan.nodeRank) +
        " is out of range for " + std::to_string(plan.nodes) +
        " node(s): expected --node-rank in [0, " +
        std::to_string(plan.nodes - 1) + "]");

  if (static_cast<long long>(plan.nodes) * plan.workersPerNode > INT_MAX)
    throw std::runtime_error("--nodes " + std::to_string(plan.nodes) +
                             " x --gpus " +
                             std::to_string(plan.workersPerNode) +
                             " workers is too many");
  plan.worldSize = plan.nodes * plan.workersPerNode;

  if (!options.masterAddr.empty()) {
    plan.masterAddr = options.masterAddr;
  } else if (slurm && (lookup("SLURM_STEP_NODELIST") ||
                       lookup("SLURM_JOB_NODELIST"))) {
    const std::string *list = lookup("SLURM_STEP_NODELIST");
    plan.masterAddr = firstSlurmHost(list ? *list : *lookup("SLURM_JOB_NODELIST"));
  } else if (plan.nodes == 1) {
    plan.masterAddr = "127.0.0.1";
  } else {
    throw std::runtime_error(
        "--nodes " + std::to_string(plan.nodes) +
        " needs --master HOST:PORT: the address of node 0, reachable from "
        "every node, and a free port");
  }

  if (options.masterPort < 0 || options.masterPort > 65535)
    throw std::runtime_error("master port " +
                             std::to_string(options.masterPort) +
                             " is out of range: expected 1..65535");
  plan.masterPort = options.masterPort > 0 ? options.masterPort
                                           : kDefaultMasterPort;
  return plan;
}

Environment workerEnvironment(const LaunchPlan &plan, int localRank,
                              const Environment &base) {
  Environment env = base;
  env["RANK"] = std::to_string(plan.nodeRank * plan.workersPerNode + localRank);
  env["LOCAL_RANK"] = std::to_string(localRank);
  env["WORLD_SIZE"] = std::to_string(plan.worldSize);
  env["LOCAL_WORLD_SIZE"] = std::to_string(plan.workersPerNode);
  env["NODE_RANK"] = std::to_string(plan.nodeRank);
  env["MASTER_ADDR"] = plan.masterAddr;
  env["MASTER_PORT"] = std::to_string(plan.masterPort);
  return env;
}

} // namespace gptrt::dist
