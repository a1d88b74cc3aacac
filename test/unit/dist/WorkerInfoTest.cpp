// Reading a worker's place in the job from torchrun-style and Slurm
// variables, with their precedence and the messages for bad values.
#include "runtime/dist/Launcher.h"
#include "runtime/dist/WorkerInfo.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gptrt::dist {
namespace {

Environment torchrun() {
  return {{"RANK", "5"},        {"LOCAL_RANK", "1"},
          {"WORLD_SIZE", "8"},  {"LOCAL_WORLD_SIZE", "4"},
          {"NODE_RANK", "1"},   {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29501"}};
}

TEST(WorkerInfo, ReadsTorchrunVariables) {
  WorkerInfo info = readWorkerInfo(torchrun());
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localWorldSize, 4);
  EXPECT_EQ(info.nodeRank, 1);
  EXPECT_EQ(info.masterAddr, "10.0.0.1");
  EXPECT_EQ(info.masterPort, 29501);
  EXPECT_TRUE(isDistributedWorker(torchrun()));
  EXPECT_FALSE(isDistributedWorker({{"PATH", "/bin"}}));
}

TEST(WorkerInfo, TheLaunchersEnvironmentReadsBack) {
  LaunchPlan plan;
  plan.nodes = 2;
  plan.nodeRank = 1;
  plan.workersPerNode = 3;
  plan.worldSize = 6;
  plan.masterAddr = "node0";
  plan.masterPort = 29400;
  WorkerInfo info = readWorkerInfo(workerEnvironment(plan, 2, {}));
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.worldSize, 6);
  EXPECT_EQ(info.localWorldSize, 3);
  EXPECT_EQ(info.nodeRank, 1);
  EXPECT_EQ(info.masterAddr, "node0");
  EXPECT_EQ(info.masterPort, 29400);
}

TEST(WorkerInfo, ReadsSlurmWhenStartedBySrun) {
  Environment env = {{"SLURM_PROCID", "6"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NTASKS", "11"},
                     {"SLURM_NODEID", "1"},
                     {"SLURM_TASKS_PER_NODE", "4(x2),3"},
                     {"SLURM_JOB_ID", "123"},
                     {"SLURM_JOB_NODELIST", "gpu[003-005],cpu1"}};
  WorkerInfo info = readWorkerInfo(env);
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_EQ(info.worldSize, 11);
  EXPECT_EQ(info.localWorldSize, 4);
  EXPECT_EQ(info.nodeRank, 1);
  EXPECT_EQ(info.masterAddr, "gpu003");
  EXPECT_EQ(info.masterPort, kDefaultMasterPort);
  EXPECT_TRUE(isDistributedWorker(env));
}

TEST(WorkerInfo, ExplicitVariablesWinOverSlurm) {
  // Workers forked by a launcher inside a Slurm job inherit SLURM_*.
  Environment env = torchrun();
  env["SLURM_PROCID"] = "0";
  env["SLURM_NTASKS"] = "2";
  env["SLURM_LOCALID"] = "0";
  env["SLURM_NODEID"] = "0";
  env["SLURM_NTASKS_PER_NODE"] = "1";
  env["SLURM_JOB_NODELIST"] = "other[1-2]";
  WorkerInfo info = readWorkerInfo(env);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.worldSize, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localWorldSize, 4);
  EXPECT_EQ(info.masterAddr, "10.0.0.1");
}

TEST(WorkerInfo, MissingValuesSayHowToStartWorkers) {
  EXPECT_ERROR(readWorkerInfo({}),
               "neither WORLD_SIZE nor SLURM_NTASKS is set: start workers with "
               "gptrun --gpus G");
  Environment env = torchrun();
  env.erase("MASTER_ADDR");
  EXPECT_ERROR(readWorkerInfo(env), "MASTER_ADDR is not set");
  env = torchrun();
  env.erase("MASTER_PORT");
  EXPECT_ERROR(readWorkerInfo(env), "MASTER_PORT is not set");
  env = torchrun();
  env.erase("LOCAL_WORLD_SIZE");
  EXPECT_ERROR(readWorkerInfo(env), "LOCAL_WORLD_SIZE is not set");
}

TEST(WorkerInfo, MalformedOrInconsistentValuesAreNamed) {
  Environment env = torchrun();
  env["RANK"] = "five";
  EXPECT_ERROR(readWorkerInfo(env),
               "RANK='five' is not an integer in [0, 7]: fix or unset it");
  env["RANK"] = "8";
  EXPECT_ERROR(readWorkerInfo(env), "RANK='8' is not an integer in [0, 7]");
  env["RANK"] = "-1";
  EXPECT_ERROR(readWorkerInfo(env), "RANK='-1'");
  env = torchrun();
  env["WORLD_SIZE"] = "0";
  EXPECT_ERROR(readWorkerInfo(env), "WORLD_SIZE='0' is not an integer >= 1");
  env = torchrun();
  env["LOCAL_RANK"] = "4";
  EXPECT_ERROR(readWorkerInfo(env), "LOCAL_RANK='4' is not an integer in [0, 3]");
  env = torchrun();
  env["MASTER_PORT"] = "70000";
  EXPECT_ERROR(readWorkerInfo(env),
               "MASTER_PORT='70000' is not an integer in [1, 65535]");
  env = torchrun();
  env["LOCAL_WORLD_SIZE"] = "9";
  EXPECT_ERROR(readWorkerInfo(env), "LOCAL_WORLD_SIZE='9' is not an integer in "
                                    "[1, 8]");
}

TEST(WorkerInfo, SlurmHostLists) {
  EXPECT_EQ(firstSlurmHost("node1"), "node1");
  EXPECT_EQ(firstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(firstSlurmHost("gpu[003-010,012],cpu1"), "gpu003");
  EXPECT_EQ(firstSlurmHost("gpu[12,14-15]"), "gpu12");
  EXPECT_EQ(firstSlurmHost("rack[2-3]-n[07-09]"), "rack2-n07");
  EXPECT_ERROR(firstSlurmHost(""), "cannot read the Slurm node list ''");
  EXPECT_ERROR(firstSlurmHost("gpu[1-2"), "set MASTER_ADDR");
  EXPECT_EQ(slurmTasksOnNode("4(x2),3", 0), 4);
  EXPECT_EQ(slurmTasksOnNode("4(x2),3", 1), 4);
  EXPECT_EQ(slurmTasksOnNode("4(x2),3", 2), 3);
  EXPECT_ERROR(slurmTasksOnNode("4(x2),3", 3), "set LOCAL_WORLD_SIZE");
  EXPECT_ERROR(slurmTasksOnNode("4(x2", 0), "cannot read SLURM_TASKS_PER_NODE");
}

} // namespace
} // namespace gptrt::dist
