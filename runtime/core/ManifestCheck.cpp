// Manifest helpers and validation (see ManifestCheck.h). Almost every problem
// found here is an inconsistency gptc wrote, so the fix given is to rebuild
// the artifact with a fixed gptc; the messages still say which value was
// wrong so the compiler bug can be found.
#include "runtime/core/ManifestCheck.h"

#include "runtime/abi/KernelTableFingerprint.h"
#include "runtime/abi/gptrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace gptrt {

namespace mf = gptc::manifest;

const char *entryName(EntryKind kind) {
  switch (kind) {
  case EntryKind::TrainStep:
    return "train_step";
  case EntryKind::EvalStep:
    return "eval_step";
  case EntryKind::Logits:
    return "logits";
  case EntryKind::OptimizerStep:
    return "optimizer_step";
  case EntryKind::CastWeights:
    return "cast_weights";
  }
  return "?";
}

const mf::Entry &entrySpec(const mf::Manifest &m, EntryKind kind) {
  switch (kind) {
  case EntryKind::TrainStep:
    return m.train_step();
  case EntryKind::EvalStep:
    return m.eval_step();
  case EntryKind::Logits:
    return m.logits();
  case EntryKind::OptimizerStep:
    return m.optimizer_step();
  case EntryKind::CastWeights:
    return m.cast_weights();
  }
  throw std::logic_error("entrySpec: bad EntryKind");
}

bool hasEntry(const mf::Manifest &m, EntryKind kind) {
  return !entrySpec(m, kind).symbol().empty();
}

size_t dtypeSize(mf::DType dtype) {
  switch (dtype) {
  case mf::F32:
  case mf::I32:
    return 4;
  case mf::BF16:
    return 2;
  case mf::F8E4M3:
  case mf::F8E5M2:
    return 1;
  default:
    return 0;
  }
}

const char *dtypeName(mf::DType dtype) {
  switch (dtype) {
  case mf::F32:
    return "f32";
  case mf::BF16:
    return "bf16";
  case mf::I32:
    return "i32";
  case mf::F8E4M3:
    return "f8e4m3";
  case mf::F8E5M2:
    return "f8e5m2";
  default:
    return "unspecified";
  }
}

int64_t numElements(const google::protobuf::RepeatedField<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw std::runtime_error("shape " + shapeString(shape) +
                               " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw std::runtime_error("shape " + shapeString(shape) +
                               " has more elements than fit in int64");
    n *= d;
  }
  return n;
}

uint64_t bufferBytes(const mf::Buffer &buffer) {
  const uint64_t n = static_cast<uint64_t>(numElements(buffer.shape()));
  const uint64_t size = dtypeSize(buffer.dtype());
  if (size != 0 && n > std::numeric_limits<uint64_t>::max() / size)
    throw std::runtime_error("buffer of shape " + shapeString(buffer.shape()) +
                             " has more bytes than fit in uint64");
  return n * size;
}

namespace {

template <typename Range> std::string joinShape(const Range &shape) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : shape) {
    if (!first)
      s += ", ";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

} // namespace

std::string shapeString(const google::protobuf::RepeatedField<int64_t> &shape) {
  return joinShape(shape);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return joinShape(shape);
}

const mf::Param *findParam(const mf::Manifest &m, const std::string &name) {
  for (const auto &p : m.params())
    if (p.name() == name)
      return &p;
  return nullptr;
}

const mf::NamedBuffer *
findBuffer(const google::protobuf::RepeatedPtrField<mf::NamedBuffer> &buffers,
           const std::string &name) {
  for (const auto &b : buffers)
    if (b.name() == name)
      return &b;
  return nullptr;
}

namespace {

constexpr const char *kCompilerFix =
    "this is a gptc bug; rebuild the artifact with a fixed gptc";

std::string hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

const char *arenaKindName(mf::ArenaKind kind) {
  switch (kind) {
  case mf::ACTIVATIONS:
    return "ACTIVATIONS";
  case mf::PARAMS:
    return "PARAMS";
  case mf::GRADS:
    return "GRADS";
  case mf::OPTIMIZER:
    return "OPTIMIZER";
  case mf::FP8_STATE:
    return "FP8_STATE";
  case mf::INPUTS:
    return "INPUTS";
  case mf::WEIGHT_CACHE:
    return "WEIGHT_CACHE";
  default:
    return "ARENA_KIND_UNSPECIFIED";
  }
}

bool sameShape(const google::protobuf::RepeatedField<int64_t> &a,
               const google::protobuf::RepeatedField<int64_t> &b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

class Checker {
public:
  Checker(const mf::Manifest &m, std::string source)
      : m_(m), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string &what, const std::string &found,
                         const std::string &expected,
                         const std::string &fix = kCompilerFix) const {
    throw std::runtime_error(source_ + ": " + what + " is " + found +
                             ", expected " + expected + ": " + fix);
  }

  void run() {
    if (m_.abi_version() != GPTRT_ABI_VERSION)
      fail("manifest abi_version", std::to_string(m_.abi_version()),
           std::to_string(GPTRT_ABI_VERSION) + " (this runtime's ABI)",
           "rebuild the artifact with the gptc that matches this runtime");
    if (m_.kernel_table_fingerprint() != kKernelTableFingerprint)
      fail("manifest kernel_table_fingerprint",
           hex(m_.kernel_table_fingerprint()),
           hex(kKernelTableFingerprint) +
               " (this runtime's runtime/abi/gptrt_kernels.def)",
           "the artifact was compiled against another kernel table; rebuild "
           "it with the gptc that matches this runtime (and bump "
           "GPTRT_ABI_VERSION whenever that table changes)");
    if (m_.micro_batch() < 1)
      fail("micro_batch", std::to_string(m_.micro_batch()), ">= 1");
    if (m_.seq() < 1)
      fail("seq", std::to_string(m_.seq()), ">= 1");
    checkModel();
    checkArenas();
    checkParams();
    checkOverlaps();
    for (EntryKind kind : kAllEntries)
      checkEntry(kind);
  }

private:
  void checkModel() {
    const mf::ModelConfig &model = m_.model();
    if (model.vocab() < 0)
      fail("model.vocab", std::to_string(model.vocab()), ">= 0");
    if (model.vocab() > 0 && model.padded_vocab() < model.vocab())
      fail("model.padded_vocab", std::to_string(model.padded_vocab()),
           ">= model.vocab = " + std::to_string(model.vocab()));
    if (model.seq() > 0 && m_.seq() > model.seq())
      fail("seq", std::to_string(m_.seq()),
           "<= model.seq = " + std::to_string(model.seq()) +
               " (the model's context length)");
  }

  void checkArenas() {
    for (int i = 0; i < m_.arenas_size(); ++i) {
      const mf::Arena &a = m_.arenas(i);
      const std::string what = "arena " + std::to_string(i) + " ('" +
                               a.name() + "')";
      if (a.kind() == mf::ARENA_KIND_UNSPECIFIED)
        fail(what + " kind", "ARENA_KIND_UNSPECIFIED",
             "one of ACTIVATIONS, PARAMS, GRADS, OPTIMIZER, FP8_STATE, INPUTS, "
             "WEIGHT_CACHE");
      const uint64_t align = a.alignment();
      if (align != 0 && (align & (align - 1)) != 0)
        fail(what + " alignment", std::to_string(align),
             "0 (default) or a power of two");
    }
  }

  // `what` names the buffer in messages ("param 'wte' value").
  void checkBuffer(const mf::Buffer &b, const std::string &what) {
    if (b.arena() >= static_cast<uint32_t>(m_.arenas_size()))
      fail(what + " arena index", std::to_string(b.arena()),
           "< " + std::to_string(m_.arenas_size()) + " (the arena count)");
    if (b.dtype() == mf::DTYPE_UNSPECIFIED || dtypeSize(b.dtype()) == 0)
      fail(what + " dtype", std::to_string(static_cast<int>(b.dtype())),
           "one of F32, BF16, I32, F8E4M3, F8E5M2");
    for (int64_t d : b.shape())
      if (d < 0)
        fail(what + " shape", shapeString(b.shape()),
             "dimensions >= 0");
    uint64_t bytes = 0;
    try {
      bytes = bufferBytes(b);
    } catch (const std::runtime_error &) {
      fail(what + " shape", shapeString(b.shape()),
           "a size that fits in 64 bits");
    }
    const mf::Arena &arena = m_.arenas(static_cast<int>(b.arena()));
    const uint64_t align =
        arena.alignment() == 0 ? 1 : arena.alignment();
    if (b.offset() % align != 0)
      fail(what + " offset", std::to_string(b.offset()),
           "a multiple of arena '" + arena.name() + "' alignment " +
               std::to_string(align));
    const uint64_t end = b.offset() + bytes;
    if (end < b.offset() || end > arena.size())
      fail(what + " end (offset " + std::to_string(b.offset()) + " + " +
               std::to_string(bytes) + " bytes)",
           std::to_string(end),
           "<= " + std::to_string(arena.size()) + ", the size of arena '" +
               arena.name() + "'");
  }

  void checkParamBuffer(const mf::Param &p, const mf::Buffer &b,
                        const char *role, mf::ArenaKind kind, bool f32Only) {
    const std::string what = "param '" + p.name() + "' " + role;
    checkBuffer(b, what + " buffer");
    const mf::Arena &arena = m_.arenas(static_cast<int>(b.arena()));
    if (arena.kind() != kind)
      fail(what + " arena '" + arena.name() + "' kind",
           arenaKindName(arena.kind()), arenaKindName(kind));
    if (!sameShape(b.shape(), p.shape()))
      fail(what + " buffer shape", shapeString(b.shape()),
           shapeString(p.shape()) + ", the param's shape");
    const bool ok = f32Only ? b.dtype() == mf::F32
                            : (b.dtype() == mf::F32 || b.dtype() == mf::BF16);
    if (!ok)
      fail(what + " buffer dtype", dtypeName(b.dtype()),
           f32Only ? "f32" : "f32 or bf16");
    persistent_.push_back({&b, what});
  }

  void checkParams() {
    std::map<std::string, const mf::Param *> byName;
    for (const mf::Param &p : m_.params()) {
      if (p.name().empty())
        fail("a param name", "empty", "a unique non-empty name");
      if (!byName.emplace(p.name(), &p).second)
        fail("param name '" + p.name() + "'", "used twice", "unique names");
      const std::string what = "param '" + p.name() + "'";
      if (p.shape_size() == 0)
        fail(what + " shape", "[]", "rank >= 1");
      for (int64_t d : p.shape())
        if (d < 1)
          fail(what + " shape", shapeString(p.shape()), "dimensions >= 1");
      try {
        numElements(p.shape());
      } catch (const std::runtime_error &) {
        fail(what + " shape", shapeString(p.shape()),
             "a size that fits in 64 bits");
      }
      if (p.real_rows() < 0 || p.real_rows() > p.shape(0))
        fail(what + " real_rows", std::to_string(p.real_rows()),
             "0 (all rows real) .. " + std::to_string(p.shape(0)) +
                 " (its first dimension)");
      if (!p.tied_to().empty()) {
        if (p.has_value() || p.has_grad() || p.has_adam_m() || p.has_adam_v())
          fail(what + " (tied to '" + p.tied_to() + "') buffers", "present",
               "none: a tied param uses the buffers of the one it is tied to");
        continue;
      }
      const mf::Init &init = p.init();
      if (init.kind() == mf::Init::KIND_UNSPECIFIED)
        fail(what + " init kind", "KIND_UNSPECIFIED", "NORMAL, ZEROS or ONES");
      if (init.kind() == mf::Init::NORMAL &&
          !(std::isfinite(init.std()) && init.std() >= 0))
        fail(what + " init std", std::to_string(init.std()),
             "a finite value >= 0");
      if (!p.has_value())
        fail(what + " value buffer", "missing",
             "a buffer in the PARAMS arena");
      checkParamBuffer(p, p.value(), "value", mf::PARAMS, true);
      if (p.has_grad())
        checkParamBuffer(p, p.grad(), "grad", mf::GRADS, false);
      if (p.has_adam_m())
        checkParamBuffer(p, p.adam_m(), "adam_m", mf::OPTIMIZER, false);
      if (p.has_adam_v())
        checkParamBuffer(p, p.adam_v(), "adam_v", mf::OPTIMIZER, false);
    }
    for (const mf::Param &p : m_.params()) {
      if (p.tied_to().empty())
        continue;
      const std::string what = "param '" + p.name() + "' tied_to";
      auto it = byName.find(p.tied_to());
      if (it == byName.end())
        fail(what, "'" + p.tied_to() + "'", "the name of another param");
      const mf::Param &target = *it->second;
      if (!target.tied_to().empty())
        fail(what, "'" + p.tied_to() + "', itself tied to '" +
                       target.tied_to() + "'",
             "an untied param (no chains)");
      if (!sameShape(target.shape(), p.shape()))
        fail("param '" + p.name() + "' shape", shapeString(p.shape()),
             shapeString(target.shape()) + ", the shape of '" +
                 target.name() + "' it is tied to");
    }
  }

  // Persistent parameter state must never share bytes: the optimizer would
  // update one parameter through another's buffer.
  void checkOverlaps() {
    struct Extent {
      uint32_t arena;
      uint64_t begin, end;
      const std::string *what;
    };
    std::vector<Extent> extents;
    for (const auto &[buffer, what] : persistent_) {
      const uint64_t bytes = bufferBytes(*buffer);
      if (bytes > 0)
        extents.push_back(
            {buffer->arena(), buffer->offset(), buffer->offset() + bytes, &what});
    }
    std::sort(extents.begin(), extents.end(),
              [](const Extent &a, const Extent &b) {
                if (a.arena != b.arena)
                  return a.arena < b.arena;
                return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
              });
    for (size_t i = 1; i < extents.size(); ++i) {
      const Extent &prev = extents[i - 1], &cur = extents[i];
      if (prev.arena == cur.arena && cur.begin < prev.end)
        fail(*cur.what + " buffer (bytes " + std::to_string(cur.begin) + ".." +
                 std::to_string(cur.end) + ")",
             "overlapping " + *prev.what + " (bytes " +
                 std::to_string(prev.begin) + ".." + std::to_string(prev.end) +
                 ")",
             "disjoint parameter buffers");
    }
  }

  void checkNamed(const mf::NamedBuffer &nb, const std::string &what,
                  std::set<std::string> &names) {
    if (nb.name().empty())
      fail(what + " name", "empty", "a name such as 'tokens' or 'loss'");
    if (!names.insert(nb.name()).second)
      fail(what + " '" + nb.name() + "'", "listed twice", "unique names");
    const std::string full = what + " '" + nb.name() + "'";
    if (!nb.has_buffer())
      fail(full + " buffer", "missing", "a buffer");
    checkBuffer(nb.buffer(), full);
    const mf::Buffer &b = nb.buffer();
    const std::string &n = nb.name();
    if ((n == "tokens" || n == "targets") &&
        (b.dtype() != mf::I32 || b.shape_size() != 2))
      fail(full, std::string(dtypeName(b.dtype())) + " " +
                     shapeString(b.shape()),
           "i32 of rank 2 [batch, seq]");
    if ((n == "loss" || n == "grad_norm") &&
        (b.dtype() != mf::F32 || numElements(b.shape()) != 1))
      fail(full, std::string(dtypeName(b.dtype())) + " " +
                     shapeString(b.shape()),
           "one f32");
    if (n == "logits" && b.dtype() != mf::F32)
      fail(full + " dtype", dtypeName(b.dtype()), "f32");
  }

  void checkEntry(EntryKind kind) {
    const mf::Entry &e = entrySpec(m_, kind);
    const std::string what = std::string("entry ") + entryName(kind);
    if (e.symbol().empty()) {
      if (e.inputs_size() != 0 || e.outputs_size() != 0)
        fail(what + " symbol", "empty while it lists buffers",
             "the name of the exported function");
      return;
    }
    std::set<std::string> names;
    for (const auto &nb : e.inputs())
      checkNamed(nb, what + " input", names);
    for (const auto &nb : e.outputs())
      checkNamed(nb, what + " output", names);
  }

  const mf::Manifest &m_;
  std::string source_;
  std::vector<std::pair<const mf::Buffer *, std::string>> persistent_;
};

} // namespace

void validateManifest(const mf::Manifest &m, const std::string &source) {
  Checker(m, source).run();
}

} // namespace gptrt
