// Runs a test body in several forked processes, one per rank, with rank 0
// hosting a store on a free port (chosen by the kernel and handed to the
// other ranks through a pipe, so parallel tests never collide). Each rank's
// body returns a report string (or throws: the report is then the error),
// which the parent collects with the rank's exit status. A rank that
// outlives the time limit is killed and reported as such, so a hanging
// collective fails the test instead of hanging it.
#ifndef GPTRT_TEST_UNIT_DIST_FORKRANKS_H
#define GPTRT_TEST_UNIT_DIST_FORKRANKS_H

#include "runtime/dist/StoreServer.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <csignal>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace gptrt::test {

struct RankResult {
  int status = -1;        // from waitpid
  std::string report;     // what the body returned, or its error
  bool threw = false;     // the body threw
  bool timedOut = false;  // killed at the time limit
  bool ok() const {
    return !threw && !timedOut && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
};

using RankBody = std::function<std::string(int rank, uint16_t storePort)>;

namespace detail {

inline void writeAllTo(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0)
      return;
    done += static_cast<size_t>(n);
  }
}

// In the child: never returns into the test framework.
[[noreturn]] inline void runRank(int rank, int world, const RankBody &body,
                                 int portRead, int portWrite, int doneRead,
                                 int doneWrite, int reportFd,
                                 std::chrono::seconds limit) {
  std::string report;
  bool threw = false;
  try {
    uint16_t port = 0;
    if (rank == 0) {
      ::close(portRead);
      dist::StoreServer server(0, "127.0.0.1");
      port = server.port();
      for (int r = 1; r < world; ++r)
        writeAllTo(portWrite, std::string(reinterpret_cast<char *>(&port), 2));
      ::close(portWrite);
      ::close(doneWrite);
      report = body(0, port);
      // Keep the store up until every other rank has exited (each holds a
      // write end of the done pipe until then).
      pollfd p{doneRead, POLLIN, 0};
      char byte;
      while (::poll(&p, 1, static_cast<int>(limit.count() * 1000)) > 0 &&
             ::read(doneRead, &byte, 1) > 0) {
      }
    } else {
      ::close(portWrite);
      ::close(doneRead);
      if (::read(portRead, &port, 2) != 2)
        throw std::runtime_error("rank 0 did not publish the store port");
      ::close(portRead);
      report = body(rank, port);
    }
  } catch (const std::exception &e) {
    report = e.what();
    threw = true;
  }
  writeAllTo(reportFd, report);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(threw ? 1 : 0);
}

} // namespace detail

inline std::vector<RankResult>
runRanks(int world, const RankBody &body,
         std::chrono::seconds limit = std::chrono::seconds(20)) {
  int portPipe[2], donePipe[2];
  if (::pipe(portPipe) != 0 || ::pipe(donePipe) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<RankResult> results(static_cast<size_t>(world));
  std::vector<pid_t> pids(static_cast<size_t>(world), -1);
  std::vector<int> reports(static_cast<size_t>(world), -1);
  std::vector<std::string> texts(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    int reportPipe[2];
    if (::pipe(reportPipe) != 0)
      throw std::runtime_error("pipe failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(reportPipe[0]);
      for (int fd : reports)
        if (fd >= 0)
          ::close(fd);
      detail::runRank(r, world, body, portPipe[0], portPipe[1], donePipe[0],
                      donePipe[1], reportPipe[1], limit);
    }
    ::close(reportPipe[1]);
    pids[static_cast<size_t>(r)] = pid;
    reports[static_cast<size_t>(r)] = reportPipe[0];
  }
  ::close(portPipe[0]);
  ::close(portPipe[1]);
  ::close(donePipe[0]);
  ::close(donePipe[1]);

  auto deadline = std::chrono::steady_clock::now() + limit;
  bool timedOut = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<int> owners;
    for (int r = 0; r < world; ++r)
      if (reports[static_cast<size_t>(r)] >= 0) {
        fds.push_back({reports[static_cast<size_t>(r)], POLLIN, 0});
        owners.push_back(r);
      }
    if (fds.empty())
      break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0)
      continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents)
        continue;
      size_t r = static_cast<size_t>(owners[i]);
      char buffer[4096];
      ssize_t n = ::read(reports[r], buffer, sizeof(buffer));
      if (n > 0) {
        texts[r].append(buffer, static_cast<size_t>(n));
      } else {
        ::close(reports[r]);
        reports[r] = -1;
      }
    }
  }
  for (int r = 0; r < world; ++r) {
    size_t i = static_cast<size_t>(r);
    if (reports[i] >= 0) {
      ::kill(pids[i], SIGKILL);
      ::close(reports[i]);
      results[i].timedOut = true;
    }
  }
  for (int r = 0; r < world; ++r) {
    size_t i = static_cast<size_t>(r);
    ::waitpid(pids[i], &results[i].status, 0);
    results[i].report = texts[i];
    results[i].threw = WIFEXITED(results[i].status) &&
                       WEXITSTATUS(results[i].status) == 1;
  }
  (void)timedOut;
  return results;
}

// "rank r: <report>" for every rank, for assertion messages.
inline std::string describe(const std::vector<RankResult> &results) {
  std::string out;
  for (size_t r = 0; r < results.size(); ++r)
    out += "\n  rank " + std::to_string(r) + (results[r].timedOut ? " (timed out)" : "") +
           " status " + std::to_string(results[r].status) + ": " +
           results[r].report;
  return out;
}

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_DIST_FORKRANKS_H
