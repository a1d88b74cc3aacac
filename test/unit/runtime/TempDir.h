// A fresh temporary directory per test (mkdtemp), removed with its contents
// when the test ends, so runtime tests that write files never collide when
// ctest runs them in parallel.
#ifndef GPTRT_TEST_UNIT_RUNTIME_TEMPDIR_H
#define GPTRT_TEST_UNIT_RUNTIME_TEMPDIR_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gptrt::test {

class TempDir {
public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "gptrt-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr)
      ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

// Runs f and returns the what() of the std::exception it throws ("" and a
// test failure when it throws nothing).
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

#define EXPECT_ERROR(stmt, substring)                                          \
  EXPECT_THAT(::gptrt::test::errorOf([&] { stmt; }),                           \
              ::testing::HasSubstr(substring))

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_RUNTIME_TEMPDIR_H
