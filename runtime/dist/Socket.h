// POSIX TCP plumbing shared by the store's client and server: an owning file
// descriptor, IPv4 name resolution and connecting, listening, and reads and
// writes bounded by a deadline. Callers turn the failures into messages that
// name the rank and the fix; this layer only reports what the system said.
#ifndef GPTRT_DIST_SOCKET_H
#define GPTRT_DIST_SOCKET_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gptrt::dist {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction.
class Socket {
public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket &&other) noexcept : fd_(other.release()) {}
  Socket &operator=(Socket &&other) noexcept {
    if (this != &other)
      reset(other.release());
    return *this;
  }
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

private:
  int fd_ = -1;
};

// strerror for `err`, thread-safe.
std::string errnoText(int err);
// "30 s", "1.5 s", "0.25 s": how timeouts appear in messages.
std::string formatDuration(std::chrono::milliseconds duration);
// "host:port".
std::string endpoint(const std::string &host, uint16_t port);

// Why connectTcp gave up. `permanent` is set when retrying cannot help (the
// host name does not resolve), so the caller fails at once.
struct ConnectFailure {
  bool permanent = false;
  std::string reason;
};

// Connects to host:port over IPv4, retrying with exponential backoff (10 ms
// doubling to 1 s) until `deadline`, because workers may start before the
// process they connect to listens. Returns a connected non-blocking socket
// with TCP_NODELAY, or an invalid one with `failure` filled in.
Socket connectTcp(const std::string &host, uint16_t port,
                  Clock::time_point deadline, ConnectFailure &failure);

// A non-blocking listening socket on bindAddress:port (port 0 picks a free
// one; read it back with localPort). Returns an invalid socket and sets
// `error` on failure.
Socket listenTcp(const std::string &bindAddress, uint16_t port,
                 std::string &error);

// The local port / IPv4 address of a bound or connected socket.
uint16_t localPort(int fd);
std::string localAddress(int fd);

// A port nobody listens on now on 127.0.0.1 (bound to learn one, then
// closed). Whoever binds it a moment later gets it unless another process
// took it in between, which the kernel's sequential ephemeral ports make
// unlikely (torchrun does the same). Throws std::runtime_error.
uint16_t freeLoopbackPort();

enum class IoStatus { Ok, TimedOut, Closed, Failed };

// Sends or receives exactly `size` bytes on a non-blocking socket, waiting
// with poll until `deadline`. On Failed, `error` holds the system's reason.
// Sends never raise SIGPIPE.
IoStatus sendAll(int fd, const char *data, size_t size,
                 Clock::time_point deadline, std::string &error);
IoStatus recvAll(int fd, char *data, size_t size, Clock::time_point deadline,
                 std::string &error);

} // namespace gptrt::dist

#endif // GPTRT_DIST_SOCKET_H
