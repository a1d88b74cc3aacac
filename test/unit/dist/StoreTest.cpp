// The rendezvous store: set/get/wait/add across threads and processes,
// blocking gets, and the messages for timeouts, unreachable or wrong
// servers and a server that goes away.
#include "runtime/dist/Socket.h"
#include "runtime/dist/Store.h"
#include "runtime/dist/StoreServer.h"
#include "test/unit/dist/ForkRanks.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>
#include <thread>

namespace gptrt::dist {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}


TEST(Store, SetGetWaitAddAcrossThreads) {
  StoreServer server(0, "127.0.0.1");
  constexpr int kThreads = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        StoreClient client("127.0.0.1", server.port(), t, 5s);
        // Binary values: embedded zero bytes must survive.
        std::string value = "value" + std::string(1, '\0') + std::to_string(t);
        client.set("key/" + std::to_string(t), value);
        std::vector<std::string> keys;
        for (int k = 0; k < kThreads; ++k)
          keys.push_back("key/" + std::to_string(k));
        client.wait(keys);
        for (int k = 0; k < kThreads; ++k)
          if (client.get(keys[k]) !=
              "value" + std::string(1, '\0') + std::to_string(k))
            failures[t] += "wrong value for " + keys[k] + "; ";
        client.add("counter", t + 1);
        storeBarrier(client, "after-add", kThreads, 5s);
        std::string counter = client.get("counter");
        if (counter.size() != 8 || counter[0] != 1 + 2 + 3 + 4)
          failures[t] += "counter holds the wrong bytes; ";
      } catch (const std::exception &e) {
        failures[t] += e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Store, AddIsAtomicUnderContention) {
  StoreServer server(0, "127.0.0.1");
  constexpr int kThreads = 4, kAdds = 200;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      StoreClient client("127.0.0.1", server.port(), t, 5s);
      for (int i = 0; i < kAdds; ++i)
        seen[t].push_back(client.add("n", 1));
    });
  for (auto &t : threads)
    t.join();
  std::set<int64_t> all;
  for (auto &values : seen)
    all.insert(values.begin(), values.end());
  // Every increment returned a distinct value: 1 .. kThreads * kAdds.
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);
  StoreClient client("127.0.0.1", server.port(), 0, 5s);
  EXPECT_EQ(client.add("n", -5), kThreads * kAdds - 5);
}

TEST(Store, GetBlocksUntilAnotherClientSets) {
  StoreServer server(0, "127.0.0.1");
  StoreClient waiter("127.0.0.1", server.port(), 1, 5s);
  StoreClient setter("127.0.0.1", server.port(), 0, 5s);
  std::string got;
  double waited = 0;
  std::thread t([&] {
    auto start = Clock::now();
    got = waiter.get("late");
    waited = secondsSince(start);
  });
  std::this_thread::sleep_for(200ms);
  setter.set("late", "here");
  t.join();
  EXPECT_EQ(got, "here");
  EXPECT_GE(waited, 0.15);
}

TEST(Store, WorksAcrossProcesses) {
  constexpr int kWorld = 3;
  auto results = test::runRanks(kWorld, [](int rank, uint16_t port) {
    StoreClient client("127.0.0.1", port, rank, 10s);
    client.set("rank/" + std::to_string(rank), std::string(1000, static_cast<char>('a' + rank)));
    client.add("arrived", 1);
    storeBarrier(client, "all-set", kWorld, 10s);
    if (client.get("arrived") != std::string("\x03\0\0\0\0\0\0\0", 8))
      throw std::runtime_error("counter is not 3 after the barrier");
    for (int r = 0; r < kWorld; ++r)
      if (client.get("rank/" + std::to_string(r)) !=
          std::string(1000, static_cast<char>('a' + r)))
        throw std::runtime_error("wrong value from rank " + std::to_string(r));
    return std::string("ok");
  });
  for (const auto &r : results)
    EXPECT_TRUE(r.ok() && r.report == "ok") << test::describe(results);
}

TEST(Store, GetTimeoutNamesRankKeyStoreAndFix) {
  StoreServer server(0, "127.0.0.1");
  StoreClient client("127.0.0.1", server.port(), 3, 200ms);
  auto start = Clock::now();
  std::string error = test::errorOf([&] { client.get("never/set"); });
  double took = secondsSince(start);
  EXPECT_THAT(error, HasSubstr("rank 3 timed out after 0.2 s waiting for key "
                               "'never/set' in the store at 127.0.0.1:" +
                               std::to_string(server.port())));
  EXPECT_THAT(error, HasSubstr("check that every rank is running"));
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 2.0);
  // The connection stays usable after a timeout.
  client.set("k", "v");
  EXPECT_EQ(client.get("k"), "v");
}

TEST(Store, WaitTimeoutListsMissingKeys) {
  StoreServer server(0, "127.0.0.1");
  StoreClient client("127.0.0.1", server.port(), 0, 5s);
  client.set("a", "1");
  EXPECT_ERROR(client.wait({"a", "b", "c"}, 100ms),
               "waiting for keys 'b', 'c' (2 of 3 missing)");
}

TEST(Store, UnreachableAddressRetriesUntilTimeoutThenExplains) {
  uint16_t port = freeLoopbackPort();
  auto start = Clock::now();
  std::string error = test::errorOf(
      [&] { StoreClient("127.0.0.1", port, 1, 300ms); });
  double took = secondsSince(start);
  EXPECT_EQ(error, "rank 1 could not reach the store at 127.0.0.1:" +
                       std::to_string(port) +
                       " after 0.3 s (Connection refused): check --master and "
                       "that node 0 is running");
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 3.0);
}

TEST(Store, ClientWaitsForAServerThatStartsLater) {
  uint16_t port = freeLoopbackPort();
  std::unique_ptr<StoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<StoreServer>(port, "127.0.0.1");
  });
  StoreClient client("127.0.0.1", port, 1, 10s);
  client.set("k", "v");
  EXPECT_EQ(client.get("k"), "v");
  starter.join();
}

TEST(Store, UnresolvableHostNamesTheHost) {
  EXPECT_ERROR(StoreClient("no-such-host.invalid", 29500, 2, 500ms),
               "no-such-host.invalid");
  EXPECT_ERROR(StoreClient("no-such-host.invalid", 29500, 2, 500ms),
               "check --master");
}

TEST(Store, SomethingElseOnThePortIsNotAStore) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address)),
            0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof(address);
  ::getsockname(listener, reinterpret_cast<sockaddr *>(&address), &len);
  uint16_t port = ntohs(address.sin_port);
  // A server speaking another protocol: answers with text and hangs up.
  std::thread other([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    const char reply[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
    ::send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
    ::close(fd);
  });
  std::string error =
      test::errorOf([&] { StoreClient("127.0.0.1", port, 1, 2s); });
  other.join();
  ::close(listener);
  EXPECT_THAT(error, HasSubstr("rank 1 reached 127.0.0.1:" +
                               std::to_string(port) +
                               " but what listens there is not a gptrun "
                               "store"));
  EXPECT_THAT(error, HasSubstr("check the port in --master"));
}

TEST(Store, ServerShutdownWakesWaitingClients) {
  auto server = std::make_unique<StoreServer>(0, "127.0.0.1");
  StoreClient client("127.0.0.1", server->port(), 2, 30s);
  std::string error;
  double took = 0;
  std::thread waiter([&] {
    auto start = Clock::now();
    error = test::errorOf([&] { client.get("never"); });
    took = secondsSince(start);
  });
  std::this_thread::sleep_for(100ms);
  server.reset(); // must not hang on the parked request
  waiter.join();
  EXPECT_THAT(error, HasSubstr("rank 2 lost its connection to the store"));
  EXPECT_THAT(error, HasSubstr("rank 0, which hosts the store, has probably "
                               "exited"));
  EXPECT_LT(took, 5.0);
  EXPECT_ERROR(client.set("k", "v"), "cannot use the store");
}

TEST(Store, AddRefusesAKeyHoldingAValue) {
  StoreServer server(0, "127.0.0.1");
  StoreClient client("127.0.0.1", server.port(), 0, 5s);
  client.set("text", "abc");
  EXPECT_ERROR(client.add("text", 1), "not a counter");
  // The connection survives the refusal.
  EXPECT_EQ(client.add("other", 2), 2);
}

TEST(Store, LargeValuesRoundTrip) {
  StoreServer server(0, "127.0.0.1");
  StoreClient client("127.0.0.1", server.port(), 0, 5s);
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 7919 >> 3);
  client.set("big", big);
  EXPECT_EQ(client.get("big"), big);
}

TEST(Store, BusyPortIsExplained) {
  StoreServer first(0, "0.0.0.0");
  EXPECT_ERROR(StoreServer(first.port(), "0.0.0.0"),
               "rank 0 cannot host the store on 0.0.0.0:" +
                   std::to_string(first.port()) +
                   " (Address already in use): choose a free port in "
                   "--master");
  EXPECT_ERROR(StoreServer(0, "localhost"), "'localhost' is not an IPv4 address");
}

} // namespace
} // namespace gptrt::dist
