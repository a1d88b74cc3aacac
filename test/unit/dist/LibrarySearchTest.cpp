// Finding NVIDIA libraries beside the loaded ones: the loaded objects'
// directories, and where pip's NVIDIA wheels keep libnccl.so.2 relative to
// cuBLASLt's.
#include "runtime/dist/LibrarySearch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

namespace gptrt::dist {
namespace {

using ::testing::ElementsAre;

TEST(LibrarySearch, FindsTheDirectoryOfALoadedLibrary) {
  // This test links the C library dynamically: its directory holds it.
  const std::string dir = loadedLibraryDir("libc.so");
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(access((dir + "/libc.so.6").c_str(), F_OK), 0) << dir;
  EXPECT_EQ(loadedLibraryDir("libno-such-library.so"), "");
}

TEST(LibrarySearch, NcclBesideCublasInAToolkitOrThePipWheels) {
  EXPECT_THAT(ncclPathsBeside("/usr/local/cuda/lib64"),
              ElementsAre("/usr/local/cuda/lib64/libnccl.so.2"));
  // CUDA 13's wheels (nvidia-cublas 13.x, nvidia-nccl-cu13).
  EXPECT_THAT(
      ncclPathsBeside("/venv/lib/python3.12/site-packages/nvidia/cu13/lib/"),
      ElementsAre(
          "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnccl.so.2",
          "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  // CUDA 12's (nvidia-cublas-cu12, nvidia-nccl-cu12).
  EXPECT_THAT(ncclPathsBeside("/sp/nvidia/cublas/lib"),
              ElementsAre("/sp/nvidia/cublas/lib/libnccl.so.2",
                          "/sp/nvidia/nccl/lib/libnccl.so.2"));
  EXPECT_TRUE(ncclPathsBeside("").empty());
}

} // namespace
} // namespace gptrt::dist
