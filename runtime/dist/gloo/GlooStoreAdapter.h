// Gloo's rendezvous store interface implemented on top of ours, so Gloo
// exchanges its pair addresses through the job's store (no second server,
// no shared file system) under a per-communicator key prefix.
#ifndef GPTRT_DIST_GLOO_GLOOSTOREADAPTER_H
#define GPTRT_DIST_GLOO_GLOOSTOREADAPTER_H

#include "runtime/dist/Store.h"

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

namespace gptrt::dist {

class GlooStoreAdapter final : public gloo::rendezvous::Store {
public:
  // `timeout` bounds the waits Gloo starts without one of its own.
  GlooStoreAdapter(dist::Store &store, std::string prefix,
                   std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string &key, const std::vector<char> &data) override {
    store_.set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string &key) override {
    std::string value = store_.get(prefix_ + key, timeout_);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string> &keys) override {
    wait(keys, timeout_);
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    std::vector<std::string> prefixed;
    prefixed.reserve(keys.size());
    for (const std::string &key : keys)
      prefixed.push_back(prefix_ + key);
    // Gloo passes zero for "no timeout"; ours always has one.
    store_.wait(prefixed, timeout.count() > 0 ? timeout : timeout_);
  }

private:
  dist::Store &store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

} // namespace gptrt::dist

#endif // GPTRT_DIST_GLOO_GLOOSTOREADAPTER_H
