// The launcher: where node values come from, the workers' environment,
// rank-prefixed output that never interleaves, and stopping every worker
// when one fails (with the summary naming it), end to end with Gloo too.
#include "runtime/dist/Launcher.h"
#include "runtime/dist/Socket.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <regex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace gptrt::dist {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// Runs a launch with stdout and stderr captured in files.
struct Captured {
  LaunchResult result;
  std::string out, err;
  double seconds = 0;
};

Captured run(LaunchOptions options, Environment env = processEnvironment()) {
  test::TempDir dir;
  int out = ::open(dir.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err = ::open(dir.file("err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  options.stdoutFd = out;
  options.stderrFd = err;
  Captured c;
  auto start = Clock::now();
  c.result = launch(options, env);
  c.seconds = secondsSince(start);
  ::close(out);
  ::close(err);
  c.out = test::readBytes(dir.file("out"));
  c.err = test::readBytes(dir.file("err"));
  return c;
}

LaunchOptions shell(const std::string &script, int workers) {
  LaunchOptions options;
  options.command = {"/bin/sh", "-c", script};
  options.workersPerNode = workers;
  return options;
}

TEST(LaunchPlan, DefaultsToOneLocalNode) {
  LaunchOptions options;
  options.workersPerNode = 4;
  LaunchPlan plan = planLaunch(options, {});
  EXPECT_EQ(plan.nodes, 1);
  EXPECT_EQ(plan.nodeRank, 0);
  EXPECT_EQ(plan.worldSize, 4);
  EXPECT_EQ(plan.masterAddr, "127.0.0.1");
  EXPECT_EQ(plan.masterPort, 29500);
}

TEST(LaunchPlan, SlurmFillsWhatTheOptionsLeaveOpen) {
  Environment slurm = {{"SLURM_PROCID", "1"},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_NNODES", "2"},
                       {"SLURM_NODEID", "1"},
                       {"SLURM_JOB_NODELIST", "gpu[07-08]"}};
  LaunchOptions options;
  options.workersPerNode = 8;
  LaunchPlan plan = planLaunch(options, slurm);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.nodeRank, 1);
  EXPECT_EQ(plan.worldSize, 16);
  EXPECT_EQ(plan.masterAddr, "gpu07");

  // Explicit options win over Slurm.
  options.nodes = 4;
  options.nodeRank = 3;
  options.masterAddr = "10.0.0.9";
  options.masterPort = 29999;
  plan = planLaunch(options, slurm);
  EXPECT_EQ(plan.nodes, 4);
  EXPECT_EQ(plan.nodeRank, 3);
  EXPECT_EQ(plan.masterAddr, "10.0.0.9");
  EXPECT_EQ(plan.masterPort, 29999);
}

TEST(LaunchPlan, BadCombinationsAreExplained) {
  LaunchOptions options;
  options.workersPerNode = 8;
  EXPECT_ERROR(planLaunch(options, {{"SLURM_PROCID", "3"},
                                    {"SLURM_NTASKS", "16"},
                                    {"SLURM_NNODES", "2"}}),
               "srun started SLURM_NTASKS=16 tasks on 2 node(s), and each "
               "launcher would fork --gpus 8 workers: run srun with "
               "--ntasks-per-node=1");
  options.nodes = 2;
  EXPECT_ERROR(planLaunch(options, {}), "--nodes 2 needs --master HOST:PORT");
  options.masterAddr = "10.0.0.1";
  options.nodeRank = 2;
  EXPECT_ERROR(planLaunch(options, {}),
               "node rank 2 is out of range for 2 node(s): expected "
               "--node-rank in [0, 1]");
  options.workersPerNode = 0;
  EXPECT_ERROR(planLaunch(options, {}), "--gpus 0: expected at least 1");
}

TEST(LaunchPlan, ParsesMaster) {
  std::string host;
  int port = 0;
  parseMaster("node0.cluster:29501", host, port);
  EXPECT_EQ(host, "node0.cluster");
  EXPECT_EQ(port, 29501);
  EXPECT_ERROR(parseMaster("node0", host, port), "--master 'node0' is not HOST:PORT");
  EXPECT_ERROR(parseMaster("node0:http", host, port),
               "--master 'node0:http' has port 'http', expected an integer "
               "in [1, 65535]: give a free port on node 0, e.g. node0:29500");
  EXPECT_ERROR(parseMaster("node0:70000", host, port), "[1, 65535]");
}

TEST(Launcher, WorkersSeeTheirEnvironment) {
  LaunchOptions options = shell(
      "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK "
      "$MASTER_ADDR $MASTER_PORT $GPTRT_TEST_MARK\"",
      2);
  options.nodes = 3;
  options.nodeRank = 1;
  options.masterAddr = "10.1.2.3";
  options.masterPort = 29555;
  Environment env = processEnvironment();
  env["GPTRT_TEST_MARK"] = "inherited";
  env["RANK"] = "stale"; // replaced, never inherited
  Captured c = run(options, env);
  EXPECT_EQ(c.result.exitCode, 0) << c.result.summary << c.err;
  EXPECT_EQ(c.result.summary, "all 2 worker(s) finished");
  EXPECT_THAT(lines(c.out),
              UnorderedElementsAre("[rank 2] 2 0 6 2 1 10.1.2.3 29555 inherited",
                                   "[rank 3] 3 1 6 2 1 10.1.2.3 29555 inherited"));
}

TEST(Launcher, OutputIsPrefixedPerRankAndNeverInterleaves) {
  // Three workers each print 5000 long lines to stdout and a few to
  // stderr, all at once; every forwarded line must be one whole line of
  // one worker.
  Captured c = run(shell("yes \"$RANK:$(printf '%0200d' 0)\" | head -n 5000; "
                         "echo \"to stderr $RANK\" >&2; printf 'no newline'",
                         3));
  ASSERT_EQ(c.result.exitCode, 0) << c.result.summary;
  std::vector<int> counts(3, 0);
  std::regex line("\\[rank ([0-2])\\] ([0-2]):0{200}");
  for (const std::string &l : lines(c.out)) {
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      ASSERT_EQ(m[1], m[2]) << l;
      ++counts[std::stoi(m[1])];
    } else {
      ASSERT_THAT(l, ::testing::MatchesRegex("\\[rank [0-2]\\] no newline"));
    }
  }
  EXPECT_EQ(counts, std::vector<int>(3, 5000));
  EXPECT_THAT(lines(c.err), UnorderedElementsAre("[rank 0] to stderr 0",
                                                 "[rank 1] to stderr 1",
                                                 "[rank 2] to stderr 2"));
}

TEST(Launcher, AFailingWorkerStopsTheOthersAndIsNamed) {
  LaunchOptions options = shell("if [ \"$RANK\" = 1 ]; then "
                                "echo 'loading shard' >&2; "
                                "echo 'boom: bad value' >&2; exit 3; fi; "
                                "exec sleep 30",
                                3);
  options.gracePeriod = 2s;
  Captured c = run(options);
  EXPECT_EQ(c.result.exitCode, 3);
  EXPECT_EQ(c.result.failedRank, 1);
  EXPECT_EQ(c.result.summary,
            "rank 1 exited with code 3 (last stderr line: \"boom: bad "
            "value\"); stopped the other 2 worker(s)");
  // The sleepers die on SIGTERM at once: far sooner than their 30 s.
  EXPECT_LT(c.seconds, 5.0);
  EXPECT_THAT(c.err, HasSubstr("[rank 1] boom: bad value\n"));
}

TEST(Launcher, AWorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  // Rank 1 fails only once rank 0 ignores SIGTERM (it says so with a file).
  test::TempDir dir;
  LaunchOptions options = shell(
      "if [ \"$RANK\" = 1 ]; then "
      "while [ ! -e \"$READY\" ]; do sleep 0.01; done; exit 5; fi; "
      "trap '' TERM; touch \"$READY\"; exec sleep 30",
      2);
  options.gracePeriod = 1s;
  Environment env = processEnvironment();
  env["READY"] = dir.file("ready");
  Captured c = run(options, env);
  EXPECT_EQ(c.result.exitCode, 5);
  EXPECT_EQ(c.result.summary, "rank 1 exited with code 5 (no stderr output); "
                              "stopped the other 1 worker(s)");
  EXPECT_GE(c.seconds, 0.9);
  EXPECT_LT(c.seconds, 4.0);
}

TEST(Launcher, AWorkerKilledBySignalIsReportedAsSuch) {
  Captured c = run(shell("if [ \"$RANK\" = 0 ]; then echo 'about to go' >&2; "
                         "kill -KILL $$; fi; exec sleep 30",
                         2));
  EXPECT_EQ(c.result.exitCode, 128 + 9);
  EXPECT_EQ(c.result.failedRank, 0);
  EXPECT_THAT(c.result.summary,
              HasSubstr("rank 0 was killed by signal 9 (SIGKILL)"));
  EXPECT_THAT(c.result.summary, HasSubstr("last stderr line: \"about to go\""));
  EXPECT_LT(c.seconds, 5.0);
}

TEST(Launcher, AMissingProgramExitsWith127) {
  LaunchOptions options;
  options.command = {"/nonexistent/worker", "--flag"};
  options.workersPerNode = 2;
  Captured c = run(options);
  EXPECT_EQ(c.result.exitCode, 127);
  EXPECT_THAT(c.result.summary,
              HasSubstr("exited with code 127 (last stderr line: \"gptrun: "
                        "cannot run '/nonexistent/worker': No such file or "
                        "directory\")"));
}

TEST(Launcher, SigtermToTheLauncherStopsEveryWorker) {
  std::thread sender([] {
    std::this_thread::sleep_for(300ms);
    ::kill(::getpid(), SIGTERM);
  });
  Captured c = run(shell("exec sleep 30", 2));
  sender.join();
  EXPECT_EQ(c.result.exitCode, 128 + SIGTERM);
  EXPECT_EQ(c.result.failedRank, -1);
  EXPECT_EQ(c.result.summary, "received SIGTERM; stopped all 2 worker(s)");
  EXPECT_LT(c.seconds, 5.0);
}


TEST(Launcher, RunsGlooWorkersEndToEnd) {
  LaunchOptions options;
  options.command = {GPTRT_DIST_TEST_WORKER, "allreduce"};
  options.workersPerNode = 3;
  options.masterPort = freeLoopbackPort();
  Captured c = run(options);
  EXPECT_EQ(c.result.exitCode, 0) << c.result.summary << "\n" << c.err;
  EXPECT_THAT(lines(c.out),
              UnorderedElementsAre(
                  "[rank 0] allreduce ok: rank 0 of 3, local rank 0, sum 6",
                  "[rank 1] allreduce ok: rank 1 of 3, local rank 1, sum 6",
                  "[rank 2] allreduce ok: rank 2 of 3, local rank 2, sum 6"));
}

TEST(Launcher, APeerDyingInACollectiveEndsTheJobWithItsName) {
  LaunchOptions options;
  options.command = {GPTRT_DIST_TEST_WORKER, "die"};
  options.workersPerNode = 2;
  options.masterPort = freeLoopbackPort();
  options.gracePeriod = 3s;
  Captured c = run(options);
  EXPECT_EQ(c.result.failedRank, 1) << c.result.summary << "\n" << c.err;
  EXPECT_THAT(c.result.summary,
              HasSubstr("rank 1 was killed by signal 9 (SIGKILL)"));
  // The survivor reported the broken collective itself, well before its
  // 5 s timeout, instead of hanging.
  EXPECT_THAT(c.err, HasSubstr("[rank 0] error: rank 0: Gloo allReduceSum of "
                               "1000 floats failed"));
  EXPECT_LT(c.seconds, 10.0);
}

} // namespace
} // namespace gptrt::dist
