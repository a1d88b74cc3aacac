// Output files are complete or absent, never half-written.
#include "compiler/driver/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

namespace {

class OutputFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("gptc-output", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string path(llvm::StringRef name) {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  size_t entries() {
    std::error_code ec;
    size_t n = 0;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      ++n;
    return n;
  }
  llvm::SmallString<128> dir;
};

TEST_F(OutputFileTest, WritesAndReplaces) {
  std::string target = path("model.mlir");
  ASSERT_FALSE(gptc::writeFileAtomically(
      target, [](llvm::raw_ostream &os) { os << "first"; }));
  ASSERT_FALSE(gptc::writeFileAtomically(
      target, [](llvm::raw_ostream &os) { os << "second"; }));
  auto buffer = llvm::MemoryBuffer::getFile(target);
  ASSERT_TRUE(static_cast<bool>(buffer));
  EXPECT_EQ((*buffer)->getBuffer(), "second");
  EXPECT_EQ(entries(), 1u) << "no temporary file may stay behind";
}

TEST_F(OutputFileTest, MissingDirectoryFailsAndLeavesNothing) {
  std::string target = path("no-such-dir/model.mlir");
  llvm::Error err = gptc::writeFileAtomically(
      target, [](llvm::raw_ostream &os) { os << "x"; });
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("no-such-dir/model.mlir"),
            std::string::npos);
  EXPECT_EQ(entries(), 0u);
}

TEST_F(OutputFileTest, TargetThatIsADirectoryKeepsIt) {
  std::string target = path("taken");
  ASSERT_FALSE(llvm::sys::fs::create_directory(target));
  llvm::Error err = gptc::writeFileAtomically(
      target, [](llvm::raw_ostream &os) { os << "x"; });
  EXPECT_TRUE(static_cast<bool>(err));
  llvm::consumeError(std::move(err));
  EXPECT_TRUE(llvm::sys::fs::is_directory(target));
  EXPECT_EQ(entries(), 1u) << "the temporary file must be removed";
}

} // namespace
