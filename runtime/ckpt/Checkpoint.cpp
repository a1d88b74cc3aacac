// Checkpoint writer and reader (see Checkpoint.h).
#include "runtime/ckpt/Checkpoint.h"

#include "runtime/abi/manifest.pb.h"
#include "runtime/core/Context.h"
#include "runtime/core/Rng.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
namespace mf = gptc::manifest;
namespace cp = gptc::checkpoint;

namespace gptrt::ckpt {

namespace {

constexpr uint32_t kFormatVersion = 1;
constexpr const char *kIndexFile = "checkpoint.pb";
constexpr const char *kLatestFile = "latest";

[[noreturn]] void ioError(const std::string &what, const fs::path &path) {
  throw std::runtime_error(what + " " + path.string() + ": " +
                           std::strerror(errno) +
                           "; check the disk and the --ckpt-dir permissions");
}

/// Writes and fsyncs `bytes` to `path`.
void writeDurably(const fs::path &path, const void *bytes, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    ioError("cannot create", path);
  const char *p = static_cast<const char *>(bytes);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      ::close(fd);
      ioError("cannot write", path);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    ioError("cannot flush", path);
}

void syncDirectory(const fs::path &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool persistent(mf::ArenaKind kind) {
  return kind == mf::PARAMS || kind == mf::OPTIMIZER || kind == mf::FP8_STATE;
}

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld", static_cast<long long>(step));
  return name;
}

} // namespace

uint64_t manifestHash(const mf::Manifest &manifest) {
  std::string bytes;
  manifest.SerializeToString(&bytes);
  return fnv1a64(bytes);
}

void checkWritable(const std::string &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create --ckpt-dir " + dir + ": " +
                             ec.message() + ": choose a writable directory");
  fs::path probe = fs::path(dir) / (".write-test-" + std::to_string(getpid()));
  FILE *f = std::fopen(probe.c_str(), "wb");
  if (!f)
    throw std::runtime_error("cannot write checkpoints to --ckpt-dir " + dir +
                             " (" + std::strerror(errno) +
                             "): choose a writable directory");
  std::fclose(f);
  fs::remove(probe, ec);
}

namespace {
// The files of one checkpoint, written into `tmp`.
void writeCheckpoint(const fs::path &tmp, const mf::Manifest &manifest,
                     const Context &ctx, cp::Checkpoint index, bool sharded,
                     std::string_view unshardedOptimizer) {
  fs::create_directory(tmp);

  index.set_format_version(kFormatVersion);
  index.set_manifest_hash(manifestHash(manifest));
  for (int i = 0; i < manifest.arenas_size(); ++i) {
    const mf::Arena &arena = manifest.arenas(i);
    if (!persistent(arena.kind()))
      continue;
    cp::ArenaFile *file = index.add_arenas();
    file->set_name(arena.name());
    file->set_file(arena.name() + ".bin");
    const char *bytes = static_cast<const char *>(ctx.arenaBase(i));
    uint64_t size = ctx.arenaSize(i);
    // A CUDA arena is device memory: checksum and write a host copy.
    std::vector<char> staged;
    if (sharded && static_cast<size_t>(i) == ctx.optimizerShardArena()) {
      bytes = unshardedOptimizer.data();
      size = unshardedOptimizer.size();
    } else if (ctx.device() != Device::Cpu) {
      staged.resize(size);
      ctx.copyOut(staged.data(), bytes, staged.size());
      bytes = staged.data();
    }
    file->set_size(size);
    file->set_fnv1a64(fnv1a64(std::string_view(bytes, size)));
    writeDurably(tmp / file->file(), bytes, size);
  }
  std::string serialized;
  index.SerializeToString(&serialized);
  writeDurably(tmp / kIndexFile, serialized.data(), serialized.size());
  syncDirectory(tmp);
}
} // namespace

std::string save(const std::string &dir, const mf::Manifest &manifest,
                 const Context &ctx, cp::Checkpoint index, int keep,
                 std::string_view unshardedOptimizer) {
  const bool sharded = ctx.optimizerShard() != nullptr;
  if (sharded &&
      unshardedOptimizer.size() !=
          manifest.arenas(static_cast<int>(ctx.optimizerShardArena())).size())
    throw std::logic_error(
        "saving a ZeRO-1 context needs the unsharded optimizer arena (" +
        std::to_string(manifest.arenas(static_cast<int>(ctx.optimizerShardArena()))
                           .size()) +
        " bytes), got " + std::to_string(unshardedOptimizer.size()));
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    throw std::runtime_error("cannot create --ckpt-dir " + dir + ": " +
                             ec.message());
  fs::path final = root / stepName(index.step());
  fs::path tmp = root / (stepName(index.step()) + ".tmp");
  fs::path latestTmp = root / (std::string(kLatestFile) + ".tmp");
  fs::remove_all(tmp);
  try {
    writeCheckpoint(tmp, manifest, ctx, index, sharded, unshardedOptimizer);
    fs::remove_all(final);
    fs::rename(tmp, final);
    // `latest` is replaced by rename too: it always names a whole
    // checkpoint.
    std::string name = final.filename().string() + "\n";
    writeDurably(latestTmp, name.data(), name.size());
    fs::rename(latestTmp, root / kLatestFile);
    syncDirectory(root);
  } catch (...) {
    // A full disk must not keep the half-written files: the next write
    // needs their room.
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    fs::remove(latestTmp, ignored);
    throw;
  }

  if (keep > 0) {
    std::vector<fs::path> steps;
    for (const auto &entry : fs::directory_iterator(root)) {
      std::string n = entry.path().filename().string();
      if (entry.is_directory() && n.rfind("step_", 0) == 0 &&
          n.find(".tmp") == std::string::npos && entry.path() != final)
        steps.push_back(entry.path());
    }
    // The oldest go first; the one just written (which `latest` names) is
    // kept whatever its number.
    std::sort(steps.begin(), steps.end());
    for (size_t i = 0; i + keep < steps.size() + 1; ++i)
      fs::remove_all(steps[i]);
  }
  return final.string();
}

std::vector<std::string> claimDirectory(const std::string &dir,
                                        const std::string &resumedFrom,
                                        bool overwrite) {
  fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return {};
  // Resuming from a checkpoint of this directory continues its line.
  if (!resumedFrom.empty() &&
      fs::equivalent(fs::path(resumedFrom).parent_path(), root, ec))
    return {};
  std::vector<std::string> earlier, steps;
  for (const auto &entry : fs::directory_iterator(root)) {
    const std::string n = entry.path().filename().string();
    const bool step = entry.is_directory() && n.rfind("step_", 0) == 0;
    if (step || n == kLatestFile || n == std::string(kLatestFile) + ".tmp")
      earlier.push_back(entry.path().string());
    if (step)
      steps.push_back(n);
  }
  if (earlier.empty())
    return {};
  std::sort(steps.begin(), steps.end());
  const std::string which =
      steps.empty() ? std::string("a '") + kLatestFile + "' file"
      : std::to_string(steps.size()) + " checkpoint(s) (" + steps.front() +
            (steps.size() > 1 ? " ... " + steps.back() : "") + ")";
  if (!overwrite)
    throw std::runtime_error(
        "--ckpt-dir " + dir + " holds " + which +
        " of an earlier run: pass --resume to continue that run, --overwrite "
        "to replace its checkpoints, or another --ckpt-dir");
  for (const std::string &path : earlier)
    fs::remove_all(path);
  return {"removed " + which + " of an earlier run from " + dir};
}

std::string resolve(const std::string &path) {
  fs::path p(path);
  if (fs::exists(p / kIndexFile))
    return p.string();
  std::ifstream latest(p / kLatestFile);
  std::string name;
  if (latest && std::getline(latest, name) && !name.empty()) {
    // A checkpoint of this directory: a name of its own, never a path.
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw std::runtime_error(
          "'" + (p / kLatestFile).string() + "' names '" + name +
          "', which is not a checkpoint inside " + path +
          ": it must name one of its step_NNNNNNNN directories; fix or "
          "delete that file, or pass the checkpoint's path to --resume");
    if (fs::exists(p / name / kIndexFile))
      return (p / name).string();
  }
  throw std::runtime_error("no checkpoint at " + path +
                           ": expected a checkpoint directory (holding " +
                           kIndexFile + ") or a --ckpt-dir with a '" +
                           kLatestFile + "' file; train with --ckpt-every N "
                           "first or give the right path");
}

cp::Checkpoint readIndex(const std::string &path) {
  std::ifstream in(fs::path(path) / kIndexFile, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  cp::Checkpoint index;
  if (!in || !index.ParseFromString(bytes))
    throw std::runtime_error("checkpoint " + path + " has no readable " +
                             kIndexFile + ": it is not a gptrun checkpoint or "
                             "is damaged; resume from another one");
  // Every checkpoint gptrun writes records its format: an empty or foreign
  // index parses as format 0.
  if (index.format_version() == 0)
    throw std::runtime_error(
        "checkpoint " + path + "'s " + kIndexFile + " is " +
        (bytes.empty() ? std::string("empty")
                       : "not a gptrun index (no format version)") +
        ": the checkpoint is not whole (a write cut short?); resume from "
        "another one");
  if (index.format_version() != kFormatVersion)
    throw std::runtime_error(
        "checkpoint " + path + " has format " +
        std::to_string(index.format_version()) + ", this gptrun reads " +
        std::to_string(kFormatVersion) + ": resume with the gptrun that wrote it");
  return index;
}

cp::Checkpoint load(const std::string &path, const mf::Manifest &manifest,
                    Context &ctx, int worldSize) {
  fs::path dir(path);
  cp::Checkpoint index = readIndex(path);
  if (index.manifest_hash() != manifestHash(manifest))
    throw std::runtime_error(
        "checkpoint " + path + " was written by an artifact with a different "
        "manifest (model, micro-batch, precision or gptc version differ): "
        "resume with the artifact that wrote it, or start a new run");
  if (index.world_size() != worldSize)
    throw std::runtime_error(
        "checkpoint " + path + " was written by " +
        std::to_string(index.world_size()) + " worker(s), this run has " +
        std::to_string(worldSize) + ": resume with " +
        std::to_string(index.world_size()) +
        " worker(s) (gptrun --procs P --nodes N with P x N = " +
        std::to_string(index.world_size()) +
        "); on another world size the gradient sums and the data windows "
        "differ, so the run could not continue exactly");
  for (const cp::ArenaFile &file : index.arenas()) {
    int arena = -1;
    for (int i = 0; i < manifest.arenas_size(); ++i)
      if (manifest.arenas(i).name() == file.name())
        arena = i;
    if (arena < 0 || ctx.arenaSize(arena) != file.size())
      throw std::runtime_error("checkpoint " + path + " holds arena '" +
                               file.name() + "' of " +
                               std::to_string(file.size()) +
                               " bytes, which this artifact does not have");
    std::ifstream data(dir / file.file(), std::ios::binary);
    // A CUDA arena is device memory: read and check a host copy first.
    std::vector<char> staged;
    if (ctx.device() != Device::Cpu)
      staged.resize(file.size());
    char *target = staged.empty() ? static_cast<char *>(ctx.arenaBase(arena))
                                  : staged.data();
    data.read(target, file.size());
    if (!data || static_cast<uint64_t>(data.gcount()) != file.size())
      throw std::runtime_error("checkpoint file " +
                               (dir / file.file()).string() +
                               " is shorter than " +
                               std::to_string(file.size()) +
                               " bytes: resume from another checkpoint");
    const char *restored = target;
    if (fnv1a64(std::string_view(restored, file.size())) != file.fnv1a64())
      throw std::runtime_error("checkpoint file " +
                               (dir / file.file()).string() +
                               " does not match its checksum: it is corrupt; "
                               "resume from another checkpoint");
    if (!staged.empty())
      ctx.copyIn(ctx.arenaBase(arena), staged.data(), staged.size());
  }
  return index;
}

} // namespace gptrt::ckpt
