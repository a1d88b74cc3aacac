// Parameter initialisation and export/import (format in Params.h).
#include "runtime/core/Params.h"

#include "runtime/core/Context.h"
#include "runtime/core/ManifestCheck.h"
#include "runtime/core/Rng.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

// The export files are raw little-endian f32; a big-endian port would need
// byte swapping here.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "params export assumes a little-endian host");

namespace gptrt {

namespace mf = gptc::manifest;
namespace fs = std::filesystem;

namespace {

float *valueOf(const mf::Param &p, Context &ctx) {
  return static_cast<float *>(ctx.data(p.value()));
}

const float *valueOf(const mf::Param &p, const Context &ctx) {
  return static_cast<const float *>(ctx.data(p.value()));
}

// Elements in the real (non-padding) rows.
int64_t realElements(const mf::Param &p) {
  const int64_t n = numElements(p.shape());
  if (p.real_rows() == 0)
    return n;
  return n / p.shape(0) * p.real_rows();
}

std::string fileNameFor(const std::string &name) {
  std::string f;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '-';
    f += ok ? c : '_';
  }
  return f + ".f32";
}

void writeFileAtomically(const fs::path &path, const void *data,
                         size_t bytes) {
  const fs::path tmp = path.string() + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    throw std::runtime_error("cannot write " + tmp.string() + " (" +
                             std::strerror(errno) +
                             "): check the directory is writable");
  const bool ok = (bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + tmp.string() + " (" +
                             std::strerror(errno) +
                             "): check free disk space");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error("cannot rename " + tmp.string() + " to " +
                             path.string() + " (" + ec.message() + ")");
}

} // namespace

void initParams(const mf::Manifest &manifest, Context &ctx, uint64_t seed) {
  for (const mf::Param &p : manifest.params()) {
    if (!p.tied_to().empty())
      continue;
    const int64_t n = numElements(p.shape());
    const int64_t real = realElements(p);
    // On CUDA the values are made in host memory and copied in at the end.
    std::vector<float> staged;
    if (ctx.device() != Device::Cpu)
      staged.resize(static_cast<size_t>(n));
    float *v = staged.empty() ? valueOf(p, ctx) : staged.data();
    switch (p.init().kind()) {
    case mf::Init::NORMAL: {
      NormalRng rng(paramSeed(seed, p.name()));
      const double std = p.init().std();
      for (int64_t i = 0; i < real; ++i)
        v[i] = static_cast<float>(std * rng.next());
      break;
    }
    case mf::Init::ZEROS:
      std::fill(v, v + real, 0.0f);
      break;
    case mf::Init::ONES:
      std::fill(v, v + real, 1.0f);
      break;
    default:
      throw std::runtime_error("param '" + p.name() + "' init kind is " +
                               std::to_string(p.init().kind()) +
                               ", expected NORMAL, ZEROS or ONES: rebuild the "
                               "artifact with a fixed gptc");
    }
    // Padding rows (e.g. vocabulary padded to a multiple of 64) must stay
    // zero so they never contribute to logits or norms.
    std::fill(v + real, v + n, 0.0f);
    if (!staged.empty())
      ctx.copyIn(valueOf(p, ctx), staged.data(), staged.size() * sizeof(float));
  }
}

void exportParams(const mf::Manifest &manifest, const Context &ctx,
                  const std::string &dir, ParamBuffer which) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create export directory " + dir + " (" +
                             ec.message() + "): choose a writable path");
  std::ostringstream index;
  index << "gptc-params 1\n";
  std::set<std::string> files;
  for (const mf::Param &p : manifest.params()) {
    if (!p.tied_to().empty())
      continue;
    for (char c : p.name())
      if (std::isspace(static_cast<unsigned char>(c)) || c == '\0')
        throw std::runtime_error("param name '" + p.name() +
                                 "' contains whitespace, expected none: "
                                 "rename it in the model");
    std::string file = fileNameFor(p.name());
    for (int i = 2; !files.insert(file).second; ++i)
      file = fileNameFor(p.name() + "." + std::to_string(i));
    const int64_t n = numElements(p.shape());
    const void *data = which == ParamBuffer::Value ? ctx.data(p.value())
                                                   : ctx.data(p.grad());
    std::vector<float> staged;  // device arenas are read through the host
    if (ctx.device() != Device::Cpu) {
      staged.resize(static_cast<size_t>(n));
      ctx.copyOut(staged.data(), data, staged.size() * sizeof(float));
      data = staged.data();
    }
    writeFileAtomically(fs::path(dir) / file, data,
                        static_cast<size_t>(n) * sizeof(float));
    index << p.name() << ' ' << file << ' ' << p.real_rows();
    for (int64_t d : p.shape())
      index << ' ' << d;
    index << '\n';
  }
  const std::string text = index.str();
  writeFileAtomically(fs::path(dir) / kParamsIndexFile, text.data(),
                      text.size());
}

void importParams(const mf::Manifest &manifest, Context &ctx,
                  const std::string &dir) {
  const fs::path indexPath = fs::path(dir) / kParamsIndexFile;
  std::ifstream in(indexPath);
  if (!in)
    throw std::runtime_error("cannot read " + indexPath.string() +
                             ", expected a parameter export: create one with "
                             "exportParams (gptrun export)");
  struct Entry {
    std::string file;
    std::vector<int64_t> shape;
  };
  std::map<std::string, Entry> entries;
  std::string line;
  if (!std::getline(in, line) || line != "gptc-params 1")
    throw std::runtime_error(indexPath.string() + " starts with '" + line +
                             "', expected 'gptc-params 1': re-export the "
                             "parameters with this runtime");
  int lineNo = 1;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::istringstream fields(line);
    std::string name;
    Entry e;
    int64_t realRows = 0;
    fields >> name >> e.file >> realRows;
    int64_t d;
    while (fields >> d)
      e.shape.push_back(d);
    if (!fields.eof() || e.file.empty() || e.shape.empty())
      throw std::runtime_error(indexPath.string() + " line " +
                               std::to_string(lineNo) + " is '" + line +
                               "', expected 'NAME FILE REAL_ROWS D0 D1 ...': "
                               "re-export the parameters");
    if (!entries.emplace(name, std::move(e)).second)
      throw std::runtime_error(indexPath.string() + " lists param '" + name +
                               "' twice, expected once: re-export the "
                               "parameters");
  }

  std::set<std::string> used;
  for (const mf::Param &p : manifest.params()) {
    if (!p.tied_to().empty())
      continue;
    auto it = entries.find(p.name());
    if (it == entries.end())
      throw std::runtime_error("param '" + p.name() + "' is missing from " +
                               indexPath.string() +
                               ", expected every param of the model: export "
                               "from an artifact of the same model");
    used.insert(p.name());
    const Entry &e = it->second;
    const std::vector<int64_t> want(p.shape().begin(), p.shape().end());
    if (e.shape != want)
      throw std::runtime_error("param '" + p.name() + "' has shape " +
                               shapeString(e.shape) + " in " +
                               indexPath.string() + ", expected " +
                               shapeString(want) +
                               ": export from an artifact of the same model");
    const fs::path file = fs::path(dir) / e.file;
    const uint64_t bytes =
        static_cast<uint64_t>(numElements(p.shape())) * sizeof(float);
    std::error_code ec;
    const uint64_t found = fs::file_size(file, ec);
    if (ec)
      throw std::runtime_error("cannot read " + file.string() + " (" +
                               ec.message() + ") for param '" + p.name() +
                               "': re-export the parameters");
    if (found != bytes)
      throw std::runtime_error(file.string() + " has " +
                               std::to_string(found) + " bytes, expected " +
                               std::to_string(bytes) + " (" +
                               shapeString(want) +
                               " f32) for param '" + p.name() +
                               "': re-export the parameters");
    std::ifstream data(file, std::ios::binary);
    std::vector<float> staged;  // device arenas are written through the host
    if (ctx.device() != Device::Cpu)
      staged.resize(bytes / sizeof(float));
    float *dst = staged.empty() ? valueOf(p, ctx) : staged.data();
    data.read(static_cast<char *>(static_cast<void *>(dst)),
              static_cast<std::streamsize>(bytes));
    if (!data || static_cast<uint64_t>(data.gcount()) != bytes)
      throw std::runtime_error("cannot read " + std::to_string(bytes) +
                               " bytes from " + file.string() +
                               ": re-export the parameters");
    if (!staged.empty())
      ctx.copyIn(valueOf(p, ctx), staged.data(), bytes);
  }
  for (const auto &[name, e] : entries)
    if (!used.count(name))
      throw std::runtime_error(
          indexPath.string() + " has param '" + name +
          "', which this model does not have (or has tied): export from an "
          "artifact of the same model");
}

} // namespace gptrt
