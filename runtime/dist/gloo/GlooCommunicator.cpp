// The Gloo communicator: CPU collectives over Gloo's TCP transport, with
// Gloo's rendezvous going through the job's store. Built into
// libgptrt-gloo.so, which the runtime loads only when a Gloo communicator
// is asked for (see GlooPlugin.h and Communicators.h).
#include "runtime/dist/Communicator.h"
#include "runtime/dist/GlooPlugin.h"
#include "runtime/dist/Store.h"
#include "runtime/dist/gloo/GlooStoreAdapter.h"
#include "runtime/dist/gloo/RingReduceScatter.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace gptrt::dist {

namespace {

void sumFloats(void *out, const void *a, const void *b, size_t n) {
  auto *o = static_cast<float *>(out);
  auto *x = static_cast<const float *>(a);
  auto *y = static_cast<const float *>(b);
  for (size_t i = 0; i < n; ++i)
    o[i] = x[i] + y[i];
}

void maxFloats(void *out, const void *a, const void *b, size_t n) {
  auto *o = static_cast<float *>(out);
  auto *x = static_cast<const float *>(a);
  auto *y = static_cast<const float *>(b);
  // NaN wins, unlike std::max, so that an overflow on one rank is seen by
  // all of them.
  for (size_t i = 0; i < n; ++i)
    o[i] = (std::isnan(x[i]) || x[i] > y[i]) ? x[i] : y[i];
}

std::string seconds(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s",
                static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

// Gloo's messages start with "[/path/to/source.cc:123] "; users need the
// rest.
std::string withoutSourceLocation(const char *what) {
  std::string text = what;
  if (!text.empty() && text[0] == '[') {
    size_t end = text.find("] ");
    if (end != std::string::npos)
      return text.substr(end + 2);
  }
  return text;
}

class GlooCommunicator final : public Communicator {
public:
  explicit GlooCommunicator(const GptrtGlooConfig &config)
      : rank_(config.rank), world_(config.worldSize),
        timeout_(config.timeoutMs) {
    const std::string who = "rank " + std::to_string(rank_);
    gloo::transport::tcp::attr attr;
    std::string where;
    if (config.iface && *config.iface) {
      attr.iface = config.iface;
      where = "network interface '" + attr.iface + "'";
    } else {
      attr.hostname = config.hostname ? config.hostname : "";
      where = "address '" + attr.hostname + "'";
    }
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception &e) {
      throw std::runtime_error(
          who + " cannot open Gloo's TCP transport on " + where + " (" +
          withoutSourceLocation(e.what()) +
          "): set GLOO_SOCKET_IFNAME to a network interface that reaches the "
          "other nodes");
    }
    context_ = std::make_shared<gloo::rendezvous::Context>(rank_, world_);
    context_->setTimeout(timeout_);
    GlooStoreAdapter store(*config.store, config.keyPrefix, timeout_);
    const std::string failed = who + " could not connect Gloo to the other " +
                               std::to_string(world_ - 1) + " rank(s): ";
    try {
      context_->connectFullMesh(store, device_);
    } catch (const gloo::Exception &e) {
      throw std::runtime_error(
          failed + withoutSourceLocation(e.what()) +
          " (a rank died or cannot be reached: see the other ranks' output "
          "for their first error)");
    } catch (const std::exception &e) {
      // The store's own errors already say what is missing and the fix.
      throw std::runtime_error(failed + e.what());
    }
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  const char *backend() const override { return "gloo"; }

protected:
  void doAllReduceSum(float *data, size_t n) override {
    guarded("allReduceSum", n, [&] { allReduce(data, n, &sumFloats); });
  }
  void doAllReduceMax(float *data, size_t n) override {
    guarded("allReduceMax", n, [&] { allReduce(data, n, &maxFloats); });
  }
  void doReduceScatterSum(const float *send, float *recv, size_t n) override {
    guarded("reduceScatterSum", n, [&] {
      ringReduceScatterSum(*context_, send, recv, n, timeout_);
    });
  }
  void doAllGather(const float *send, float *recv, size_t n) override {
    guarded("allGather", n, [&] {
      gloo::AllgatherOptions options(context_);
      // Without an input Gloo gathers in place, which is exactly the
      // in-place layout (send == recv + rank * n).
      if (send != recv + static_cast<size_t>(rank_) * n)
        options.setInput(const_cast<float *>(send), n);
      options.setOutput(recv, n * static_cast<size_t>(world_));
      gloo::allgather(options);
    });
  }
  void doAllToAll(const float *send, float *recv, size_t n) override {
    const size_t total = n * static_cast<size_t>(world_);
    guarded("allToAll", total, [&] {
      gloo::AlltoallOptions options(context_);
      options.setInput(const_cast<float *>(send), total);
      options.setOutput(recv, total);
      gloo::alltoall(options);
    });
  }
  void doBroadcast(float *data, size_t n, int root) override {
    guarded("broadcast", n, [&] {
      gloo::BroadcastOptions options(context_);
      options.setOutput(data, n);
      options.setRoot(root);
      gloo::broadcast(options);
    });
  }
  void doBarrier() override {
    guarded("barrier", 0, [&] {
      gloo::BarrierOptions options(context_);
      gloo::barrier(options);
    });
  }

private:
  void allReduce(float *data, size_t n,
                 void (*reduce)(void *, const void *, const void *, size_t)) {
    gloo::AllreduceOptions options(context_);
    options.setOutput(data, n);
    options.setReduceFunction(reduce);
    gloo::allreduce(options);
  }

  // Runs one collective; any failure becomes one line that names this rank,
  // the operation and the timeout, and says where to look.
  template <typename F> void guarded(const char *op, size_t n, F &&run) {
    try {
      run();
    } catch (const std::exception &e) {
      std::string what = "rank " + std::to_string(rank_) + ": Gloo " + op;
      if (n > 0)
        what += " of " + std::to_string(n) + " floats";
      throw std::runtime_error(
          what + " failed (" + withoutSourceLocation(e.what()) +
          "): another rank died or stalled for longer than the " +
          seconds(timeout_) +
          " timeout; see the other ranks' output for their first error");
    }
  }

  int rank_;
  int world_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
};

// Gloo writes to its sockets with writev, which raises SIGPIPE when a peer
// has died; the default action would kill this process before the
// collective can report which peer it was. A handler the program installed
// itself is left alone.
void ignoreSigpipeByDefault() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 &&
      !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

void copyMessage(const std::string &message, char *error, size_t capacity) {
  if (error == nullptr || capacity == 0)
    return;
  size_t n = std::min(message.size(), capacity - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

} // namespace

} // namespace gptrt::dist

extern "C" gptrt::dist::Communicator *
gptrt_gloo_create(const GptrtGlooConfig *config, char *error,
                  size_t errorCapacity) {
  using namespace gptrt::dist;
  try {
    if (config == nullptr || config->version != GPTRT_GLOO_PLUGIN_VERSION)
      throw std::runtime_error(
          std::string(GPTRT_GLOO_LIBRARY_NAME) + " implements plugin version " +
          std::to_string(GPTRT_GLOO_PLUGIN_VERSION) +
          " but the runtime asked for version " +
          (config ? std::to_string(config->version) : std::string("?")) +
          ": use the library built with this runtime (ninja gptrt-gloo)");
    if (config->store == nullptr)
      throw std::runtime_error("the Gloo communicator needs a store");
    ignoreSigpipeByDefault();
    return new GlooCommunicator(*config);
  } catch (const std::exception &e) {
    copyMessage(e.what(), error, errorCapacity);
  } catch (...) {
    copyMessage("unknown error creating the Gloo communicator", error,
                errorCapacity);
  }
  return nullptr;
}
