// POSIX TCP plumbing for the store (see Socket.h).
#include "runtime/dist/Socket.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace gptrt::dist {

namespace {

// Milliseconds left until `deadline` for poll, never negative.
int pollTimeout(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  // Round up so that a sub-millisecond remainder still waits once.
  return static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes.
IoStatus waitFor(int fd, short events, Clock::time_point deadline,
                 std::string &error) {
  for (;;) {
    pollfd p{fd, events, 0};
    int timeout = pollTimeout(deadline);
    int n = ::poll(&p, 1, timeout);
    if (n > 0)
      return IoStatus::Ok; // errors and hang-ups surface in the next call
    if (n == 0) {
      if (Clock::now() >= deadline)
        return IoStatus::TimedOut;
      continue;
    }
    if (errno == EINTR)
      continue;
    error = errnoText(errno);
    return IoStatus::Failed;
  }
}

// One attempt at connecting to `address` before `deadline`; 0 or an errno.
int connectOnce(const addrinfo &address, Clock::time_point deadline,
                Socket &out) {
  Socket s(::socket(address.ai_family,
                    address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    address.ai_protocol));
  if (!s.valid())
    return errno;
  if (::connect(s.fd(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS)
      return errno;
    std::string ignored;
    IoStatus status = waitFor(s.fd(), POLLOUT, deadline, ignored);
    if (status == IoStatus::TimedOut)
      return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      return errno;
    if (err != 0)
      return err;
  }
  int one = 1;
  // The store exchanges small request/reply messages: Nagle would add delay.
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  out = std::move(s);
  return 0;
}

} // namespace

void Socket::reset(int fd) {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = fd;
}

std::string errnoText(int err) {
  char buffer[256];
  // GNU strerror_r returns the message, which may not be `buffer`.
  return ::strerror_r(err, buffer, sizeof(buffer));
}

std::string formatDuration(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s",
                static_cast<double>(duration.count()) / 1000.0);
  return text;
}

std::string endpoint(const std::string &host, uint16_t port) {
  return host + ":" + std::to_string(port);
}

Socket connectTcp(const std::string &host, uint16_t port,
                  Clock::time_point deadline, ConnectFailure &failure) {
  auto backoff = std::chrono::milliseconds(10);
  const std::string service = std::to_string(port);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *addresses = nullptr;
    int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
    if (rc == 0) {
      int err = 0;
      for (addrinfo *a = addresses; a; a = a->ai_next) {
        Socket s;
        err = connectOnce(*a, deadline, s);
        if (err == 0) {
          ::freeaddrinfo(addresses);
          return s;
        }
      }
      ::freeaddrinfo(addresses);
      failure.reason = errnoText(err);
    } else if (rc == EAI_AGAIN || (rc == EAI_SYSTEM && errno == EINTR)) {
      // A name server that did not answer in time may answer later.
      failure.reason = ::gai_strerror(rc);
    } else {
      failure.permanent = true;
      failure.reason = rc == EAI_SYSTEM ? errnoText(errno) : ::gai_strerror(rc);
      return Socket();
    }
    // The last attempt happens at the deadline, so "after <timeout>" in the
    // caller's message is true.
    Clock::time_point now = Clock::now();
    if (now >= deadline)
      return Socket();
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

Socket listenTcp(const std::string &bindAddress, uint16_t port,
                 std::string &error) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (::inet_pton(AF_INET, bindAddress.c_str(), &address.sin_addr) != 1) {
    error = "'" + bindAddress + "' is not an IPv4 address";
    return Socket();
  }
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) {
    error = errnoText(errno);
    return Socket();
  }
  int one = 1;
  // A restarted job can reuse the port while old connections sit in
  // TIME_WAIT.
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), reinterpret_cast<sockaddr *>(&address), sizeof(address)) !=
          0 ||
      ::listen(s.fd(), SOMAXCONN) != 0) {
    error = errnoText(errno);
    return Socket();
  }
  return s;
}

uint16_t localPort(int fd) {
  sockaddr_in address{};
  socklen_t len = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &len) != 0)
    return 0;
  return ntohs(address.sin_port);
}

uint16_t freeLoopbackPort() {
  std::string error;
  Socket probe = listenTcp("127.0.0.1", 0, error);
  if (!probe.valid())
    throw std::runtime_error("cannot find a free port on 127.0.0.1 (" + error +
                             "): give one with --master 127.0.0.1:PORT");
  return localPort(probe.fd());
}

std::string localAddress(int fd) {
  sockaddr_in address{};
  socklen_t len = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &len) != 0)
    return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
  return text;
}

IoStatus sendAll(int fd, const char *data, size_t size,
                 Clock::time_point deadline, std::string &error) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      IoStatus status = waitFor(fd, POLLOUT, deadline, error);
      if (status != IoStatus::Ok)
        return status;
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
      return IoStatus::Closed;
    error = errnoText(errno);
    return IoStatus::Failed;
  }
  return IoStatus::Ok;
}

IoStatus recvAll(int fd, char *data, size_t size, Clock::time_point deadline,
                 std::string &error) {
  while (size > 0) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return IoStatus::Closed;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IoStatus status = waitFor(fd, POLLIN, deadline, error);
      if (status != IoStatus::Ok)
        return status;
      continue;
    }
    if (errno == ECONNRESET)
      return IoStatus::Closed;
    error = errnoText(errno);
    return IoStatus::Failed;
  }
  return IoStatus::Ok;
}

} // namespace gptrt::dist
