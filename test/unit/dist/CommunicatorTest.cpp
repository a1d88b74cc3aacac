// The Communicator interface's argument checks (the same on every backend)
// and the one-rank LocalCommunicator.
#include "runtime/dist/Communicators.h"
#include "runtime/dist/LocalCommunicator.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace gptrt::dist {
namespace {

using ::testing::ElementsAre;

TEST(LocalCommunicator, CollectivesAreIdentitiesOrCopies) {
  auto comm = makeLocalCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->worldSize(), 1);
  EXPECT_STREQ(comm->backend(), "local");

  std::vector<float> data = {1.5f, -2.0f, 3.25f};
  comm->allReduceSum(data.data(), data.size());
  EXPECT_THAT(data, ElementsAre(1.5f, -2.0f, 3.25f));
  comm->allReduceMax(data.data(), data.size());
  EXPECT_THAT(data, ElementsAre(1.5f, -2.0f, 3.25f));
  comm->broadcast(data.data(), data.size(), 0);
  EXPECT_THAT(data, ElementsAre(1.5f, -2.0f, 3.25f));

  std::vector<float> out(3, 0.0f);
  comm->reduceScatterSum(data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  std::fill(out.begin(), out.end(), 0.0f);
  comm->allGather(data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  std::fill(out.begin(), out.end(), 0.0f);
  comm->allToAll(data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  // In place.
  comm->reduceScatterSum(data.data(), data.data(), 3);
  comm->allGather(data.data(), data.data(), 3);
  EXPECT_THAT(data, ElementsAre(1.5f, -2.0f, 3.25f));
  comm->barrier();
  // Zero elements: nothing to do, even with null buffers.
  comm->allReduceSum(nullptr, 0);
}

TEST(LocalCommunicator, RefusesARootOtherThanZero) {
  auto comm = makeLocalCommunicator();
  float x = 1;
  EXPECT_ERROR(comm->broadcast(&x, 1, 1),
               "broadcast: root rank 1 is out of range: expected 0 <= root < "
               "world size 1");
}

// Records calls, so the checks can be tested at a world size above one
// without any communication.
class RecordingCommunicator final : public Communicator {
public:
  RecordingCommunicator(int rank, int world) : rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  const char *backend() const override { return "recording"; }
  int calls = 0;

protected:
  void doAllReduceSum(float *, size_t) override { ++calls; }
  void doAllReduceMax(float *, size_t) override { ++calls; }
  void doReduceScatterSum(const float *, float *, size_t) override { ++calls; }
  void doAllGather(const float *, float *, size_t) override { ++calls; }
  void doAllToAll(const float *, float *, size_t) override { ++calls; }
  void doBroadcast(float *, size_t, int) override { ++calls; }
  void doBarrier() override { ++calls; }

private:
  int rank_, world_;
};

TEST(Communicator, ReduceScatterNeedsACountDivisibleByTheWorldSize) {
  RecordingCommunicator comm(1, 4);
  std::vector<float> send(10), recv(3);
  EXPECT_ERROR(comm.reduceScatterSum(send.data(), recv.data(), 10),
               "reduceScatterSum: 10 elements is not a multiple of the world "
               "size 4: pad the buffer to 12 elements so that every rank owns "
               "an equal slice");
  EXPECT_EQ(comm.calls, 0);
  EXPECT_EQ(comm.paddedCount(10), 12u);
  EXPECT_EQ(comm.paddedCount(12), 12u);
  EXPECT_EQ(comm.paddedCount(0), 0u);
  send.resize(12);
  comm.reduceScatterSum(send.data(), recv.data(), 12);
  EXPECT_EQ(comm.calls, 1);
}

TEST(Communicator, AllToAllNeedsSeparateBuffers) {
  RecordingCommunicator comm(1, 3);
  std::vector<float> buffer(12);
  EXPECT_ERROR(comm.allToAll(buffer.data(), buffer.data() + 4, 4),
               "allToAll: the send and recv buffers overlap: use separate "
               "buffers");
  EXPECT_EQ(comm.calls, 0);
  std::vector<float> send(12), recv(12);
  comm.allToAll(send.data(), recv.data(), 4);
  EXPECT_EQ(comm.calls, 1);
}

TEST(Communicator, InPlaceOnlyAtThisRanksSlice) {
  RecordingCommunicator comm(1, 4);
  std::vector<float> buffer(12);
  // Rank 1's slice starts at element 3.
  comm.reduceScatterSum(buffer.data(), buffer.data() + 3, 12);
  EXPECT_ERROR(comm.reduceScatterSum(buffer.data(), buffer.data() + 2, 12),
               "reduceScatterSum: the send and recv buffers overlap other than "
               "in place: use separate buffers or recv == send + rank * n / "
               "world");
  comm.allGather(buffer.data() + 3, buffer.data(), 3);
  EXPECT_ERROR(comm.allGather(buffer.data(), buffer.data(), 3),
               "allGather: the send and recv buffers overlap");
  EXPECT_EQ(comm.calls, 2);
}

TEST(Communicator, NullBuffersAndBadRootsAreRefused) {
  RecordingCommunicator comm(0, 2);
  EXPECT_ERROR(comm.allReduceSum(nullptr, 4),
               "allReduceSum: null buffer for 4 elements");
  float x = 0;
  EXPECT_ERROR(comm.broadcast(&x, 1, 2), "root rank 2 is out of range");
  EXPECT_ERROR(comm.broadcast(&x, 1, -1), "root rank -1 is out of range");
  comm.barrier();
  EXPECT_EQ(comm.calls, 1);
}

} // namespace
} // namespace gptrt::dist
