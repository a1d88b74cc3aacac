// Where a dlopened NVIDIA library may be when the loader's own search
// (LD_LIBRARY_PATH, RUNPATH, the loader cache) misses it: beside the CUDA
// libraries this process already loaded. A machine whose CUDA libraries
// came with PyTorch's pip wheels keeps each in its own
// site-packages/nvidia/<package>/lib, on no search path.
#ifndef GPTRT_DIST_LIBRARYSEARCH_H
#define GPTRT_DIST_LIBRARYSEARCH_H

#include <string>
#include <vector>

namespace gptrt::dist {

/// The directory of the loaded shared object whose file name starts with
/// `prefix` ("libcublasLt.so"), or "" when none is loaded.
std::string loadedLibraryDir(const std::string &prefix);

/// Candidate paths of libnccl.so.2 given the directory of a loaded CUDA
/// library: that directory (a CUDA toolkit's lib), and, where it is a pip
/// wheel's (site-packages/nvidia/cu13/lib for CUDA 13's cuBLAS,
/// site-packages/nvidia/cublas/lib for CUDA 12's), the nvidia-nccl
/// wheel's site-packages/nvidia/nccl/lib. Empty for an empty directory.
std::vector<std::string> ncclPathsBeside(const std::string &cudaLibraryDir);

} // namespace gptrt::dist

#endif // GPTRT_DIST_LIBRARYSEARCH_H
