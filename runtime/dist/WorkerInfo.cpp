// Reading a worker's place in the job from its environment (see
// WorkerInfo.h).
#include "runtime/dist/WorkerInfo.h"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <stdexcept>

extern char **environ;

namespace gptrt::dist {

namespace {

const char *const kHowToStart =
    "start workers with gptrun --gpus G (which sets RANK, LOCAL_RANK, "
    "WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT) "
    "or with srun";

const std::string *lookup(const Environment &env, const std::string &name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

// The value of the first variable in `names` that is set, and which one.
struct Found {
  std::string name;
  std::string value;
};

bool findFirst(const Environment &env, std::initializer_list<const char *> names,
               Found &found) {
  for (const char *name : names)
    if (const std::string *value = lookup(env, name)) {
      found = {name, *value};
      return true;
    }
  return false;
}

int readInt(const Environment &env, std::initializer_list<const char *> names,
            int min, int max) {
  Found found;
  if (!findFirst(env, names, found)) {
    std::string list;
    for (const char *name : names)
      list += list.empty() ? name : std::string(" nor ") + name;
    throw std::runtime_error(
        (names.size() > 1 ? "neither " + list + " is set: "
                          : list + " is not set: ") +
        kHowToStart);
  }
  return parseIntVariable(found.name, found.value, min, max);
}

bool inSlurmJob(const Environment &env) {
  return lookup(env, "SLURM_PROCID") || lookup(env, "SLURM_JOB_ID");
}

} // namespace

Environment processEnvironment() {
  Environment env;
  for (char **entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq != std::string::npos)
      env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return env;
}

int parseIntVariable(const std::string &name, const std::string &value,
                     int min, int max) {
  bool digits = !value.empty() && value.size() <= 10;
  for (char c : value)
    digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
  long long parsed = digits ? std::strtoll(value.c_str(), nullptr, 10) : -1;
  if (!digits || parsed < min || parsed > max)
    throw std::runtime_error(
        name + "='" + value + "' is not " +
        (max == INT_MAX ? "an integer >= " + std::to_string(min)
                        : "an integer in [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]") +
        ": fix or unset it (it is normally set by the launcher)");
  return static_cast<int>(parsed);
}

std::string firstSlurmHost(const std::string &nodeList) {
  auto malformed = [&] {
    return std::runtime_error("cannot read the Slurm node list '" + nodeList +
                              "': set MASTER_ADDR to the address of node 0");
  };
  // The first entry: up to the first comma outside brackets.
  std::string entry;
  int depth = 0;
  for (char c : nodeList) {
    if (c == ',' && depth == 0)
      break;
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (depth < 0 || depth > 1)
      throw malformed();
    entry += c;
  }
  if (depth != 0 || entry.empty())
    throw malformed();
  // Each "[a-b,c]" range becomes its first value "a" (zero padding kept).
  std::string host;
  for (size_t i = 0; i < entry.size();) {
    if (entry[i] != '[') {
      host += entry[i++];
      continue;
    }
    size_t close = entry.find(']', i);
    size_t end = entry.find_first_of(",-]", i + 1);
    std::string first = entry.substr(i + 1, end - i - 1);
    if (first.empty())
      throw malformed();
    for (char c : first)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        throw malformed();
    host += first;
    i = close + 1;
  }
  return host;
}

int slurmTasksOnNode(const std::string &tasksPerNode, int node) {
  auto malformed = [&] {
    return std::runtime_error("cannot read SLURM_TASKS_PER_NODE='" +
                              tasksPerNode + "' for node " +
                              std::to_string(node) +
                              ": set LOCAL_WORLD_SIZE to the number of "
                              "workers on each node");
  };
  int seen = 0;
  size_t i = 0;
  while (i < tasksPerNode.size()) {
    size_t end = tasksPerNode.find(',', i);
    std::string item = tasksPerNode.substr(
        i, end == std::string::npos ? std::string::npos : end - i);
    i = end == std::string::npos ? tasksPerNode.size() : end + 1;
    std::string count = item, repeat = "1";
    size_t paren = item.find("(x");
    if (paren != std::string::npos) {
      if (item.back() != ')')
        throw malformed();
      count = item.substr(0, paren);
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    int tasks = parseIntVariable("SLURM_TASKS_PER_NODE", count, 1, INT_MAX);
    int times = parseIntVariable("SLURM_TASKS_PER_NODE", repeat, 1, INT_MAX);
    if (node < seen + times)
      return tasks;
    seen += times;
  }
  throw malformed();
}

bool isDistributedWorker(const Environment &env) {
  return lookup(env, "RANK") || lookup(env, "WORLD_SIZE") ||
         lookup(env, "SLURM_PROCID");
}

WorkerInfo readWorkerInfo(const Environment &env) {
  WorkerInfo info;
  info.worldSize = readInt(env, {"WORLD_SIZE", "SLURM_NTASKS"}, 1, INT_MAX);
  info.rank = readInt(env, {"RANK", "SLURM_PROCID"}, 0, info.worldSize - 1);
  info.nodeRank = readInt(env, {"NODE_RANK", "SLURM_NODEID"}, 0, INT_MAX);

  Found found;
  if (findFirst(env, {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"}, found))
    info.localWorldSize =
        parseIntVariable(found.name, found.value, 1, info.worldSize);
  else if (const std::string *perNode = lookup(env, "SLURM_TASKS_PER_NODE"))
    info.localWorldSize = slurmTasksOnNode(*perNode, info.nodeRank);
  else
    throw std::runtime_error(std::string("LOCAL_WORLD_SIZE is not set: ") +
                             kHowToStart);
  if (info.localWorldSize > info.worldSize)
    throw std::runtime_error(
        "the local world size " + std::to_string(info.localWorldSize) +
        " is larger than the world size " + std::to_string(info.worldSize) +
        ": check LOCAL_WORLD_SIZE and WORLD_SIZE");
  info.localRank = readInt(env, {"LOCAL_RANK", "SLURM_LOCALID"}, 0,
                           info.localWorldSize - 1);

  if (const std::string *addr = lookup(env, "MASTER_ADDR")) {
    info.masterAddr = *addr;
  } else if (findFirst(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                             "SLURM_NODELIST"},
                       found)) {
    info.masterAddr = firstSlurmHost(found.value);
  } else {
    throw std::runtime_error(
        std::string("MASTER_ADDR is not set: set it to the address of node 0 "
                    "(the launcher's --master does), or ") +
        kHowToStart);
  }
  if (info.masterAddr.empty())
    throw std::runtime_error("MASTER_ADDR is empty: set it to the address of "
                             "node 0");
  if (const std::string *port = lookup(env, "MASTER_PORT"))
    info.masterPort = parseIntVariable("MASTER_PORT", *port, 1, 65535);
  else if (inSlurmJob(env))
    info.masterPort = kDefaultMasterPort;
  else
    throw std::runtime_error(
        std::string("MASTER_PORT is not set: set it to the store's port on "
                    "node 0 (the launcher's --master HOST:PORT does), or ") +
        kHowToStart);
  return info;
}

} // namespace gptrt::dist
