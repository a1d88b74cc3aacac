// The Gloo communicator over loopback TCP with 2, 3 and 4 forked ranks:
// every collective against a reference computed here from the inputs every
// rank can regenerate (seeded per rank), results identical on every rank,
// a dead or stalled peer turning into an error within the timeout, and the
// loader's messages when libgptrt-gloo.so cannot be used.
#include "runtime/dist/Communicators.h"
#include "runtime/dist/Store.h"
#include "test/unit/dist/ForkRanks.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace gptrt::dist {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Whole numbers in [-1000, 1000]: their sums over <= 4 ranks are exact in
// float in any order, so results can be compared with == whatever order
// the algorithm adds in.
std::vector<float> wholeInput(int rank, size_t n, int salt) {
  std::mt19937 gen(static_cast<uint32_t>(7919 * salt + rank));
  std::uniform_int_distribution<int> value(-1000, 1000);
  std::vector<float> out(n);
  for (float &x : out)
    x = static_cast<float>(value(gen));
  return out;
}

// Arbitrary floats, for results that must match bit for bit anyway.
std::vector<float> realInput(int rank, size_t n, int salt) {
  std::mt19937 gen(static_cast<uint32_t>(104729 * salt + rank));
  std::normal_distribution<float> value(0.0f, 3.0f);
  std::vector<float> out(n);
  for (float &x : out)
    x = value(gen);
  return out;
}

std::string digest(const std::vector<float> &values) {
  uint64_t h = 1469598103934665603ull;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; ++i)
      h = (h ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
  char text[20];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void expectEqual(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  if (got.size() != want.size())
    throw std::runtime_error(what + ": size " + std::to_string(got.size()) +
                             " != " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0)
      throw std::runtime_error(what + ": element " + std::to_string(i) +
                               " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(want[i]));
}

std::unique_ptr<Communicator> connect(StoreClient &store, int rank, int world,
                                      std::chrono::milliseconds timeout) {
  GlooOptions options;
  options.timeout = timeout;
  // Found by the default search: this test runs from bin/, the library is
  // built into lib/.
  return makeGlooCommunicator(store, rank, world, options);
}

// Runs every collective on one rank and checks it; returns a digest of the
// results that must be the same on every rank.
std::string checkCollectives(int rank, uint16_t port, int world) {
  StoreClient store("127.0.0.1", port, rank, 20s);
  auto comm = connect(store, rank, world, 20s);
  if (comm->rank() != rank || comm->worldSize() != world ||
      std::string(comm->backend()) != "gloo")
    throw std::runtime_error("wrong rank, world size or backend");
  std::string shared;

  { // allReduceSum, exact, over several Gloo segments (1 MiB each).
    const size_t n = (1 << 18) + 7;
    std::vector<float> data = wholeInput(rank, n, 1), want(n, 0.0f);
    for (int r = 0; r < world; ++r) {
      std::vector<float> x = wholeInput(r, n, 1);
      for (size_t i = 0; i < n; ++i)
        want[i] += x[i];
    }
    comm->allReduceSum(data.data(), n);
    expectEqual(data, want, "allReduceSum");
  }
  { // allReduceSum of arbitrary floats: close to the float64 sum and the
    // same bits on every rank.
    const size_t n = 4099;
    std::vector<float> data = realInput(rank, n, 2);
    std::vector<double> want(n, 0.0);
    for (int r = 0; r < world; ++r) {
      std::vector<float> x = realInput(r, n, 2);
      for (size_t i = 0; i < n; ++i)
        want[i] += x[i];
    }
    comm->allReduceSum(data.data(), n);
    for (size_t i = 0; i < n; ++i)
      if (std::fabs(data[i] - want[i]) > 1e-5 * (1 + std::fabs(want[i])))
        throw std::runtime_error("allReduceSum of floats: element " +
                                 std::to_string(i) + " is off");
    shared += "sum=" + digest(data);
  }
  { // allReduceMax, exact; a NaN on the last rank wins everywhere.
    const size_t n = 10007;
    std::vector<float> data = realInput(rank, n, 3), want(n, -INFINITY);
    for (int r = 0; r < world; ++r) {
      std::vector<float> x = realInput(r, n, 3);
      for (size_t i = 0; i < n; ++i)
        want[i] = std::max(want[i], x[i]);
    }
    if (rank == world - 1)
      data[5] = NAN;
    comm->allReduceMax(data.data(), n);
    if (!std::isnan(data[5]))
      throw std::runtime_error("allReduceMax lost a NaN");
    data[5] = want[5];
    expectEqual(data, want, "allReduceMax");
  }
  { // reduceScatterSum, out of place and in place. Whole numbers are exact;
    // arbitrary floats are summed in the ring's documented order, slice k
    // as x[k+1] + x[k+2] + ... + x[k].
    const size_t slice = 2503, n = slice * static_cast<size_t>(world);
    for (int salt : {4, 5}) {
      auto input = [&](int r) {
        return salt == 4 ? wholeInput(r, n, salt) : realInput(r, n, salt);
      };
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < world; ++r)
        inputs.push_back(input(r));
      std::vector<float> want(slice);
      for (size_t i = 0; i < slice; ++i) {
        float sum = inputs[(rank + 1) % world][rank * slice + i];
        for (int s = 2; s <= world; ++s)
          sum += inputs[(rank + s) % world][rank * slice + i];
        want[i] = sum;
      }
      std::vector<float> send = input(rank), recv(slice, -1.0f);
      comm->reduceScatterSum(send.data(), recv.data(), n);
      expectEqual(recv, want, "reduceScatterSum (salt " + std::to_string(salt) + ")");
      expectEqual(send, input(rank), "reduceScatterSum's send buffer");
      float *mine = send.data() + rank * slice;
      comm->reduceScatterSum(send.data(), mine, n);
      expectEqual(std::vector<float>(mine, mine + slice), want,
                  "in-place reduceScatterSum");
    }
  }
  { // allGather, out of place and in place.
    const size_t n = 777;
    std::vector<float> want;
    for (int r = 0; r < world; ++r) {
      std::vector<float> x = realInput(r, n, 6);
      want.insert(want.end(), x.begin(), x.end());
    }
    std::vector<float> send = realInput(rank, n, 6), recv(n * world, 0.0f);
    comm->allGather(send.data(), recv.data(), n);
    expectEqual(recv, want, "allGather");
    std::vector<float> inPlace(n * world, 0.0f);
    std::copy(send.begin(), send.end(), inPlace.begin() + rank * n);
    comm->allGather(inPlace.data() + rank * n, inPlace.data(), n);
    expectEqual(inPlace, want, "in-place allGather");
  }
  { // allToAll: block r of rank q's send arrives as block q of rank r's
    // recv, for every pair.
    const size_t n = 513;
    std::vector<float> send = realInput(rank, n * world, 8),
                       recv(n * world, 0.0f), want;
    for (int r = 0; r < world; ++r) {
      std::vector<float> theirs = realInput(r, n * world, 8);
      want.insert(want.end(), theirs.begin() + rank * n,
                  theirs.begin() + (rank + 1) * n);
    }
    comm->allToAll(send.data(), recv.data(), n);
    expectEqual(recv, want, "allToAll");
    expectEqual(send, realInput(rank, n * world, 8), "allToAll's send buffer");
  }
  { // broadcast from the last rank and from rank 0.
    for (int root : {world - 1, 0}) {
      const size_t n = 3001;
      std::vector<float> data = realInput(rank, n, 7 + root);
      comm->broadcast(data.data(), n, root);
      expectEqual(data, realInput(root, n, 7 + root),
                  "broadcast from " + std::to_string(root));
    }
  }
  { // A count the world size does not divide fails on every rank before
    // any communication, so the communicator stays usable.
    std::vector<float> send(static_cast<size_t>(world) + 1), recv(1);
    try {
      comm->reduceScatterSum(send.data(), recv.data(), send.size());
      throw std::runtime_error("no error for an indivisible count");
    } catch (const std::invalid_argument &e) {
      if (std::string(e.what()).find("pad the buffer") == std::string::npos)
        throw std::runtime_error(std::string("wrong message: ") + e.what());
    }
    float one = 1.0f;
    comm->allReduceSum(&one, 1);
    if (one != static_cast<float>(world))
      throw std::runtime_error("allReduceSum after a refused call is wrong");
  }
  { // barrier: nobody leaves before the last rank arrives.
    auto start = Clock::now();
    if (rank == 0)
      std::this_thread::sleep_for(200ms);
    comm->barrier();
    if (Clock::now() - start < 150ms)
      throw std::runtime_error("barrier returned before rank 0 arrived");
  }
  return shared;
}

class GlooCollectives : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectives, MatchTheReferenceOnEveryRank) {
  const int world = GetParam();
  auto results = test::runRanks(world, [world](int rank, uint16_t port) {
    return checkCollectives(rank, port, world);
  });
  for (const auto &r : results)
    EXPECT_TRUE(r.ok()) << test::describe(results);
  for (const auto &r : results)
    EXPECT_EQ(r.report, results[0].report)
        << "results differ between ranks" << test::describe(results);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCollectives, ::testing::Values(2, 3, 4),
                         [](const auto &info) {
                           return "World" + std::to_string(info.param);
                         });

// A peer that dies (SIGKILL) after the rendezvous: the survivor's
// collective must throw, not hang, and well within the timeout.
TEST(Gloo, DeadPeerMakesTheSurvivorThrow) {
  auto results = test::runRanks(2, [](int rank, uint16_t port) -> std::string {
    StoreClient store("127.0.0.1", port, rank, 10s);
    auto comm = connect(store, rank, 2, 3s);
    // After one collective the connections are complete on both sides, so
    // the death hits rank 0 inside a collective, not inside its rendezvous.
    comm->barrier();
    if (rank == 1)
      ::raise(SIGKILL);
    std::vector<float> data(1 << 16, 1.0f);
    auto start = Clock::now();
    try {
      for (int i = 0; i < 100; ++i)
        comm->allReduceSum(data.data(), data.size());
    } catch (const std::exception &e) {
      double took = std::chrono::duration<double>(Clock::now() - start).count();
      if (took > 3.0 + 1.0)
        throw std::runtime_error("threw only after " + std::to_string(took) +
                                 " s: " + e.what());
      return e.what();
    }
    throw std::runtime_error("allReduceSum with a dead peer did not throw");
  });
  ASSERT_TRUE(results[0].ok()) << test::describe(results);
  EXPECT_THAT(results[0].report,
              HasSubstr("rank 0: Gloo allReduceSum of 65536 floats failed"));
  EXPECT_THAT(results[0].report,
              HasSubstr("another rank died or stalled for longer than the 3 s "
                        "timeout"));
  EXPECT_TRUE(WIFSIGNALED(results[1].status));
}

// A peer that is alive but never joins the collective: the timeout set on
// the Gloo context fires.
TEST(Gloo, StalledPeerTimesOut) {
  auto results = test::runRanks(2, [](int rank, uint16_t port) -> std::string {
    StoreClient store("127.0.0.1", port, rank, 10s);
    auto comm = connect(store, rank, 2, 1s);
    if (rank == 1) {
      store.get("rank0/done"); // stall, then leave cleanly
      return "stalled";
    }
    float x = 1;
    auto start = Clock::now();
    std::string error;
    try {
      comm->allReduceSum(&x, 1);
    } catch (const std::exception &e) {
      error = e.what();
    }
    double took = std::chrono::duration<double>(Clock::now() - start).count();
    store.set("rank0/done", "");
    if (error.empty())
      throw std::runtime_error("allReduceSum with a stalled peer did not throw");
    if (took < 0.9 || took > 3.0)
      throw std::runtime_error("threw after " + std::to_string(took) +
                               " s, expected about 1 s: " + error);
    return error;
  });
  ASSERT_TRUE(results[0].ok()) << test::describe(results);
  EXPECT_THAT(results[0].report, HasSubstr("rank 0: Gloo allReduceSum of 1 floats failed"));
  EXPECT_THAT(results[0].report, HasSubstr("the 1 s timeout"));
}

// A rank that never creates its communicator: the rendezvous of the
// others times out naming what it waited for.
TEST(Gloo, RendezvousWithAMissingRankTimesOut) {
  auto results = test::runRanks(2, [](int rank, uint16_t port) -> std::string {
    StoreClient store("127.0.0.1", port, rank, 10s);
    if (rank == 1)
      return "absent";
    auto start = Clock::now();
    try {
      connect(store, 0, 2, 1s);
    } catch (const std::exception &e) {
      double took = std::chrono::duration<double>(Clock::now() - start).count();
      if (took > 4.0)
        throw std::runtime_error("gave up only after " + std::to_string(took) +
                                 " s");
      return e.what();
    }
    throw std::runtime_error("the rendezvous without rank 1 succeeded");
  });
  ASSERT_TRUE(results[0].ok()) << test::describe(results);
  EXPECT_THAT(results[0].report,
              HasSubstr("rank 0 could not connect Gloo to the other 1 rank(s)"));
  EXPECT_THAT(results[0].report, HasSubstr("timed out after 1 s waiting for"));
}

TEST(GlooLibrary, SearchesNextToTheExecutable) {
  auto candidates = glooLibraryCandidates("", "/opt/gptc/bin");
  ASSERT_GE(candidates.size(), 2u);
  EXPECT_THAT(candidates, ::testing::Contains("/opt/gptc/lib/libgptrt-gloo.so"));
  EXPECT_EQ(candidates.back(), "/opt/gptc/bin/libgptrt-gloo.so");
  EXPECT_THAT(glooLibraryCandidates("/x/y.so", "/opt/gptc/bin"),
              ::testing::ElementsAre("/x/y.so"));
  // This test binary finds the library built next to it.
  EXPECT_NE(loadGlooLibrary(glooLibraryCandidates("", executableDir()), false),
            nullptr);
}

TEST(GlooLibrary, MissingLibraryNamesThePathsTriedAndTheFix) {
  EXPECT_ERROR(loadGlooLibrary({"/nowhere/lib/libgptrt-gloo.so",
                                "/nowhere/bin/libgptrt-gloo.so"},
                               false),
               "the Gloo communicator library libgptrt-gloo.so was not found; "
               "tried /nowhere/lib/libgptrt-gloo.so (not found), "
               "/nowhere/bin/libgptrt-gloo.so (not found): build it (ninja "
               "gptrt-gloo), install it next to the executable (cmake "
               "--install), or set GPTRT_GLOO_LIB to its path");
  EXPECT_ERROR(loadGlooLibrary({"/nowhere/x.so"}, true),
               "GPTRT_GLOO_LIB names a missing file: tried /nowhere/x.so (not "
               "found): set GPTRT_GLOO_LIB to the path of libgptrt-gloo.so");
}

TEST(GlooLibrary, UnloadableOrForeignLibrariesAreExplained) {
  test::TempDir dir;
  test::writeBytes(dir.file("libgptrt-gloo.so"), "not an ELF file");
  EXPECT_ERROR(loadGlooLibrary({dir.file("libgptrt-gloo.so")}, false),
               "cannot load the Gloo communicator library " +
                   dir.file("libgptrt-gloo.so"));
  EXPECT_ERROR(loadGlooLibrary({GPTRT_NOT_A_PLUGIN}, true),
               "is not the Gloo communicator library (it has no "
               "gptrt_gloo_create)");
}

TEST(GlooLibrary, EnvironmentOverrideIsUsedAlone) {
  ::setenv("GPTRT_GLOO_LIB", "/nowhere/libgptrt-gloo.so", 1);
  StoreServer server(0, "127.0.0.1");
  StoreClient store("127.0.0.1", server.port(), 0, 5s);
  std::string error = test::errorOf([&] { makeGlooCommunicator(store, 0, 1); });
  ::unsetenv("GPTRT_GLOO_LIB");
  EXPECT_THAT(error, HasSubstr("GPTRT_GLOO_LIB names a missing file: tried "
                               "/nowhere/libgptrt-gloo.so (not found)"));
}

TEST(Gloo, OneRankWorldNeedsNoPeers) {
  StoreServer server(0, "127.0.0.1");
  StoreClient store("127.0.0.1", server.port(), 0, 5s);
  auto comm = connect(store, 0, 1, 5s);
  std::vector<float> data = {1, 2, 3}, out(3);
  comm->allReduceSum(data.data(), 3);
  comm->reduceScatterSum(data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  comm->barrier();
}

} // namespace
} // namespace gptrt::dist
