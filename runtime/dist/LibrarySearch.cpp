// Finding NVIDIA libraries beside the loaded ones (see LibrarySearch.h).
#include "runtime/dist/LibrarySearch.h"

#include <link.h>

namespace gptrt::dist {

namespace {

std::string dirOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string loadedLibraryDir(const std::string &prefix) {
  struct Search {
    const std::string &prefix;
    std::string dir;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (baseOf(name).rfind(s->prefix, 0) != 0)
          return 0;
        s->dir = dirOf(name);
        return 1;
      },
      &search);
  return search.dir;
}

std::vector<std::string> ncclPathsBeside(const std::string &cudaLibraryDir) {
  if (cudaLibraryDir.empty())
    return {};
  std::string dir = cudaLibraryDir;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::vector<std::string> paths{dir + "/libnccl.so.2"};
  for (const char *wheel : {"/nvidia/cu13/lib", "/nvidia/cublas/lib"})
    if (endsWith(dir, wheel)) {
      const std::string nvidia =
          dir.substr(0, dir.size() - std::string(wheel).size()) + "/nvidia";
      paths.push_back(nvidia + "/nccl/lib/libnccl.so.2");
    }
  return paths;
}

} // namespace gptrt::dist
