// The worker launcher (see Launcher.h): fork/exec, output forwarding through
// pipes and poll, and stopping every worker when one fails.
#include "runtime/dist/Launcher.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <poll.h>
#include <stdexcept>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gptrt::dist {

namespace {

using Clock = std::chrono::steady_clock;

// A worker line longer than this is forwarded in pieces, so one worker
// printing without newlines cannot make the launcher buffer without bound.
constexpr size_t kMaxLineBytes = 64 * 1024;
// How often exited workers are noticed when they print nothing.
constexpr int kReapIntervalMs = 20;

const int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::string signalName(int signal) {
  const char *abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev
                : "signal " + std::to_string(signal);
}

std::string errnoMessage(int err) {
  char buffer[256];
  return ::strerror_r(err, buffer, sizeof(buffer));
}

// --- Signals sent to the launcher become bytes in a pipe the loop polls.
std::atomic<bool> launching{false};
int signalPipeWrite = -1;

void forwardSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = ::write(signalPipeWrite, &byte, 1);
  (void)ignored;
  errno = saved;
}

// Installs the forwarding handlers (and ignores SIGPIPE, so a closed output
// cannot kill the launcher mid-way) for the duration of one launch, and
// remembers what was there before so workers start with the dispositions
// and mask the launcher itself was given (nohup's ignored SIGHUP included).
class SignalScope {
public:
  SignalScope() {
    if (launching.exchange(true))
      throw std::runtime_error("launch() is already running in this process: "
                               "one launch at a time");
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
      launching = false;
      throw std::runtime_error("cannot create the launcher's signal pipe (" +
                               errnoMessage(errno) + ")");
    }
    read_ = fds[0];
    signalPipeWrite = fds[1];
    ::sigprocmask(SIG_SETMASK, nullptr, &mask_);
    struct sigaction forward {};
    forward.sa_handler = forwardSignal;
    sigemptyset(&forward.sa_mask);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &forward, &saved_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &savedPipe_);
  }
  ~SignalScope() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &saved_[i], nullptr);
    ::sigaction(SIGPIPE, &savedPipe_, nullptr);
    ::close(signalPipeWrite);
    signalPipeWrite = -1;
    ::close(read_);
    launching = false;
  }
  int readFd() const { return read_; }
  // In a forked child, before exec: async-signal-safe calls only. SIGPIPE
  // goes back to its default whatever the launcher had (Gloo ignores it in
  // processes that use it), as programs such as `yes | head` expect; this is
  // what Python's subprocess does too.
  void restoreInChild() const {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &saved_[i], nullptr);
    struct sigaction byDefault {};
    byDefault.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &byDefault, nullptr);
    ::sigprocmask(SIG_SETMASK, &mask_, nullptr);
  }

private:
  int read_ = -1;
  sigset_t mask_;
  struct sigaction saved_[std::size(kForwardedSignals)];
  struct sigaction savedPipe_;
};

// --- Workers and their output.
struct Stream {
  int fd = -1;
  std::string partial; // bytes after the last newline
};

struct Worker {
  int localRank = 0;
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream out, err;
  std::string lastErrorLine;
};

// Writes all of `text`, waiting when `fd` is non-blocking and full. Errors
// (a closed terminal or pipe) drop the text: workers must keep running.
void writeFully(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else {
      return;
    }
  }
}

class Forwarder {
public:
  Forwarder(int stdoutFd, int stderrFd) : stdoutFd_(stdoutFd), stderrFd_(stderrFd) {}

  // Reads what `stream` has (a bounded amount, so one chatty worker cannot
  // starve the loop) and forwards its complete lines. Closes the stream at
  // end of file. True when anything was read or the stream ended.
  bool pump(Worker &w, Stream &s, bool isStderr) {
    char buffer[65536];
    bool moved = false;
    for (int reads = 0; s.fd >= 0 && reads < 16; ++reads) {
      ssize_t n = ::read(s.fd, buffer, sizeof(buffer));
      if (n > 0) {
        s.partial.append(buffer, static_cast<size_t>(n));
        forwardLines(w, s, isStderr, false);
        moved = true;
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      forwardLines(w, s, isStderr, true);
      ::close(s.fd);
      s.fd = -1;
      moved = true;
    }
    return moved;
  }

  // Everything readable now, without waiting for end of file: a grandchild
  // may hold the pipe open long after the worker is gone.
  void drain(Worker &w) {
    for (int round = 0; round < 64; ++round) {
      bool moved = pump(w, w.out, false);
      moved |= pump(w, w.err, true);
      if (!moved)
        break;
    }
  }

  // The unterminated rest of a stream, as a line of its own.
  void flush(Worker &w) {
    forwardLines(w, w.out, false, true);
    forwardLines(w, w.err, true, true);
  }

private:
  void forwardLines(Worker &w, Stream &s, bool isStderr, bool all) {
    size_t start = 0;
    for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos;
         start = nl + 1)
      emit(w, s.partial.substr(start, nl - start), isStderr);
    s.partial.erase(0, start);
    if (!s.partial.empty() && (all || s.partial.size() >= kMaxLineBytes)) {
      emit(w, s.partial, isStderr);
      s.partial.clear();
    }
  }

  // One write per line, so lines of different workers never mix.
  void emit(Worker &w, const std::string &line, bool isStderr) {
    writeFully(isStderr ? stderrFd_ : stdoutFd_,
               "[rank " + std::to_string(w.rank) + "] " + line + "\n");
    if (isStderr && line.find_first_not_of(" \t\r") != std::string::npos)
      w.lastErrorLine = line;
  }

  int stdoutFd_;
  int stderrFd_;
};

// Builds one worker's argv and environment, forks and execs it with its
// stdout and stderr going into new pipes.
void start(Worker &w, const std::vector<std::string> &command,
           const Environment &environment, const SignalScope &signals) {
  int outPipe[2], errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0)
    throw std::runtime_error("cannot create a pipe for rank " +
                             std::to_string(w.rank) + " (" +
                             errnoMessage(errno) + ")");
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(outPipe[0]);
    ::close(outPipe[1]);
    throw std::runtime_error("cannot create a pipe for rank " +
                             std::to_string(w.rank) + " (" +
                             errnoMessage(err) + ")");
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls are allowed.
  std::vector<char *> argv;
  for (const std::string &arg : command)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> entries;
  for (const auto &[name, value] : environment)
    entries.push_back(name + "=" + value);
  std::vector<char *> envp;
  for (std::string &entry : entries)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string cannotRun = "gptrun: cannot run '" + command[0] + "': ";
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::dup2(errPipe[1], STDERR_FILENO);
    signals.restoreInChild();
    // Die with the launcher, even when it is SIGKILLed; the check after
    // covers a launcher that died before prctl took effect.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(126);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t ignored = ::write(STDERR_FILENO, cannotRun.data(), cannotRun.size());
    const char *why = ::strerror(err);
    ignored = ::write(STDERR_FILENO, why, ::strlen(why));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    ::_exit(127);
  }
  int forkError = errno;
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  if (pid < 0) {
    ::close(outPipe[0]);
    ::close(errPipe[0]);
    throw std::runtime_error("cannot start rank " + std::to_string(w.rank) +
                             " (fork: " + errnoMessage(forkError) +
                             "): lower --gpus or free memory and processes");
  }
  w.pid = pid;
  w.running = true;
  w.out.fd = outPipe[0];
  w.err.fd = errPipe[0];
  ::fcntl(w.out.fd, F_SETFL, ::fcntl(w.out.fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(w.err.fd, F_SETFL, ::fcntl(w.err.fd, F_GETFL) | O_NONBLOCK);
}

std::string describeExit(const Worker &w, const LaunchPlan &plan) {
  std::string who = "rank " + std::to_string(w.rank);
  if (plan.nodes > 1)
    who += " (node " + std::to_string(plan.nodeRank) + ", local rank " +
           std::to_string(w.localRank) + ")";
  std::string how;
  if (WIFEXITED(w.status)) {
    how = " exited with code " + std::to_string(WEXITSTATUS(w.status));
  } else {
    int signal = WTERMSIG(w.status);
    how = " was killed by signal " + std::to_string(signal) + " (" +
          signalName(signal) + ")";
    if (signal == SIGKILL)
      how += ", often the out-of-memory killer: check dmesg";
  }
  std::string last = w.lastErrorLine.empty()
                         ? "no stderr output"
                         : "last stderr line: \"" + w.lastErrorLine + "\"";
  return who + how + " (" + last + ")";
}

} // namespace

LaunchResult launch(const LaunchOptions &options, const Environment &env) {
  if (options.command.empty() || options.command[0].empty())
    throw std::runtime_error("no worker command to launch: give the program "
                             "and its arguments");
  const LaunchPlan plan = planLaunch(options, env);
  SignalScope signals;
  Forwarder forwarder(options.stdoutFd, options.stderrFd);

  std::vector<Worker> workers(static_cast<size_t>(plan.workersPerNode));
  for (size_t i = 0; i < workers.size(); ++i) {
    Worker &w = workers[i];
    w.localRank = static_cast<int>(i);
    w.rank = plan.nodeRank * plan.workersPerNode + w.localRank;
    try {
      start(w, options.command, workerEnvironment(plan, w.localRank, env),
            signals);
    } catch (...) {
      for (Worker &started : workers)
        if (started.running) {
          ::kill(started.pid, SIGKILL);
          ::waitpid(started.pid, nullptr, 0);
          ::close(started.out.fd);
          ::close(started.err.fd);
        }
      throw;
    }
  }

  size_t running = workers.size();
  int failed = -1;          // index of the first worker that failed
  int interruptedBy = 0;    // a signal the launcher received
  size_t stoppedOthers = 0; // workers still running at the first failure
  bool stopping = false, killed = false;
  Clock::time_point killAt;
  auto stopAll = [&](int signal) {
    for (Worker &w : workers)
      if (w.running) {
        ::kill(w.pid, signal);
        // A stopped worker (SIGSTOP, Ctrl-Z) would hold the signal pending
        // until the grace period's SIGKILL; let it act on it now.
        if (signal != SIGKILL)
          ::kill(w.pid, SIGCONT);
      }
    if (!stopping) {
      stopping = true;
      killAt = Clock::now() + options.gracePeriod;
    }
  };

  std::vector<pollfd> fds;
  std::vector<std::pair<Worker *, bool>> owners; // fds[i + 1]: stderr?
  while (running > 0) {
    fds.assign(1, {signals.readFd(), POLLIN, 0});
    owners.clear();
    for (Worker &w : workers) {
      if (w.out.fd >= 0) {
        fds.push_back({w.out.fd, POLLIN, 0});
        owners.push_back({&w, false});
      }
      if (w.err.fd >= 0) {
        fds.push_back({w.err.fd, POLLIN, 0});
        owners.push_back({&w, true});
      }
    }
    if (::poll(fds.data(), fds.size(), kReapIntervalMs) < 0 && errno != EINTR) {
      // Cannot watch the workers any more: do not leave them behind.
      int err = errno;
      for (Worker &w : workers)
        if (w.running) {
          ::kill(w.pid, SIGKILL);
          ::waitpid(w.pid, nullptr, 0);
        }
      for (Worker &w : workers) {
        if (w.out.fd >= 0)
          ::close(w.out.fd);
        if (w.err.fd >= 0)
          ::close(w.err.fd);
      }
      throw std::runtime_error("the launcher cannot watch its workers (poll: " +
                               errnoMessage(err) + "); stopped all of them");
    }

    unsigned char received[16];
    ssize_t n;
    while ((n = ::read(signals.readFd(), received, sizeof(received))) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        if (interruptedBy == 0 && failed < 0) {
          interruptedBy = received[i];
          stopAll(received[i]);
        } else {
          // Asked again (a second Ctrl-C): no more grace.
          stopAll(SIGKILL);
          killed = true;
        }
      }
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents) {
        auto [w, isStderr] = owners[i - 1];
        forwarder.pump(*w, isStderr ? w->err : w->out, isStderr);
      }

    for (size_t i = 0; i < workers.size(); ++i) {
      Worker &w = workers[i];
      if (!w.running || ::waitpid(w.pid, &w.status, WNOHANG) != w.pid)
        continue;
      w.running = false;
      --running;
      forwarder.drain(w); // its last words, before they are summarised
      bool ok = WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
      if (!ok && failed < 0 && interruptedBy == 0) {
        failed = static_cast<int>(i);
        stoppedOthers = running;
        stopAll(SIGTERM);
      }
    }
    if (stopping && !killed && Clock::now() >= killAt) {
      stopAll(SIGKILL);
      killed = true;
    }
  }

  for (Worker &w : workers) {
    forwarder.drain(w);
    forwarder.flush(w);
    if (w.out.fd >= 0)
      ::close(w.out.fd);
    if (w.err.fd >= 0)
      ::close(w.err.fd);
  }

  LaunchResult result;
  if (failed >= 0) {
    const Worker &w = workers[static_cast<size_t>(failed)];
    result.failedRank = w.rank;
    result.exitCode = WIFEXITED(w.status) ? WEXITSTATUS(w.status)
                                          : 128 + WTERMSIG(w.status);
    result.summary = describeExit(w, plan);
    if (stoppedOthers > 0)
      result.summary += "; stopped the other " + std::to_string(stoppedOthers) +
                        " worker(s)";
  } else if (interruptedBy != 0) {
    result.exitCode = 128 + interruptedBy;
    result.summary = "received " + signalName(interruptedBy) +
                     "; stopped all " + std::to_string(workers.size()) +
                     " worker(s)";
  } else {
    result.summary =
        "all " + std::to_string(workers.size()) + " worker(s) finished";
  }
  return result;
}

} // namespace gptrt::dist
