// The artifact loader on real shared objects built from
// fixtures/FixtureArtifact.c: the success path (a tiny tied-embedding model
// trained end to end through the C ABI, checked against the CPU kernels and
// finite differences) and every loading error.
#include "runtime/abi/ManifestSection.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/core/Params.h"
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime/TempDir.h"
#include "test/unit/runtime/TestUtil.h"
#include "test/unit/runtime/fixtures/FixtureManifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <google/protobuf/util/message_differencer.h>

namespace gptrt::test {
namespace {

namespace cpu = gptrt::cpu;

std::string fixture(const std::string &name) {
  return std::string(GPTRT_FIXTURE_DIR) + "/" + name + ".so";
}

const std::vector<int32_t> kTokens = {0, 3, 5, 2, 2, 1};
const std::vector<int32_t> kTargets = {3, 5, 2, 2, 1, 4};

template <typename T>
std::vector<T> paramValues(const Context &ctx, const mf::Manifest &m,
                           const std::string &name) {
  const mf::Param *p = findParam(m, name);
  const auto n = static_cast<size_t>(numElements(p->shape()));
  const auto *f = static_cast<const float *>(ctx.data(p->value()));
  return std::vector<T>(f, f + n);
}

// The fixture's forward and loss, with the kernels it calls, in T.
template <typename T>
T referenceLoss(const std::vector<T> &wte, const std::vector<T> &bias,
                std::vector<T> *logitsOut = nullptr) {
  std::vector<T> x(FX_N * FX_C), logits(FX_N * FX_VP), lse(FX_N);
  cpu::embeddingForward(x.data(), wte.data(), kTokens.data(), FX_N, FX_C);
  cpu::gemm(logits.data(), x.data(), wte.data(), FX_N, FX_VP, FX_C, false,
            true, T(0));
  cpu::addBias(logits.data(), bias.data(), FX_N, FX_VP);
  if (logitsOut)
    *logitsOut = logits;
  return cpu::crossEntropyForward(lse.data(), logits.data(), kTargets.data(),
                                  FX_N, FX_V, FX_VP, FX_IGNORE);
}

// An address to key graph slots by in tests.
const int kGraphKeyMarker = 0;

class ArtifactTest : public ::testing::Test {
protected:
  ArtifactTest() : artifact(fixture("fixture-ok")), ctx(artifact.manifest()) {
    initParams(m(), ctx, 5);
    writeBatch(ctx, m(), EntryKind::TrainStep, kTokens.data(), kTargets.data(),
               FX_B, FX_T);
  }
  const mf::Manifest &m() const { return artifact.manifest(); }

  Artifact artifact;
  Context ctx;
};

TEST_F(ArtifactTest, LoadsManifestAndEntries) {
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      m(), fixtureManifest()));
  for (EntryKind kind : kAllEntries)
    EXPECT_EQ(artifact.hasEntry(kind), kind != EntryKind::CastWeights)
        << entryName(kind);
  EXPECT_EQ(artifact.path(), fixture("fixture-ok"));
}

TEST_F(ArtifactTest, TrainStepLossMatchesTheKernels) {
  artifact.run(EntryKind::TrainStep, ctx);
  const float loss = readScalarOutput(ctx, m(), EntryKind::TrainStep, "loss");
  const float want = referenceLoss(paramValues<float>(ctx, m(), "wte"),
                                   paramValues<float>(ctx, m(), "head.bias"));
  EXPECT_EQ(loss, want);
  EXPECT_NEAR(loss, std::log(double(FX_V)), 0.05) << "small init: ~ln(V)";
  artifact.run(EntryKind::EvalStep, ctx);
  EXPECT_EQ(readScalarOutput(ctx, m(), EntryKind::EvalStep, "loss"), loss);
}

// CUDA graphs are a GPU matter: on the CPU the flag changes nothing, every
// call runs its entry (the loss of each of three calls is recomputed).
TEST_F(ArtifactTest, CudaGraphsAreIgnoredOnTheCpu) {
  ctx.setCudaGraphs(true);
  EXPECT_FALSE(ctx.cudaGraphs());
  for (int call = 0; call < 3; ++call) {
    float *loss = static_cast<float *>(ctx.data(
        entrySpec(m(), EntryKind::EvalStep).outputs(0).buffer()));
    *loss = -1.0f;
    artifact.run(EntryKind::EvalStep, ctx);
    EXPECT_NEAR(readScalarOutput(ctx, m(), EntryKind::EvalStep, "loss"),
                std::log(double(FX_V)), 0.05)
        << "call " << call;
  }
  // The slots a Cuda context would key its graphs by.
  int a = ctx.graphSlot(&kGraphKeyMarker, true);
  EXPECT_EQ(ctx.graphSlot(&kGraphKeyMarker, true), a);
  EXPECT_NE(ctx.graphSlot(&kGraphKeyMarker, false), a);
  EXPECT_EQ(ctx.eagerRuns(a), 0);
}

// The gradients the artifact accumulates through gptrt_* calls agree with
// central differences of the loss in double.
TEST_F(ArtifactTest, TrainStepGradientsMatchFiniteDifferences) {
  ctx.setLossScale(1.0f);
  artifact.run(EntryKind::TrainStep, ctx);
  Vec wte = paramValues<double>(ctx, m(), "wte");
  Vec bias = paramValues<double>(ctx, m(), "head.bias");
  auto loss = [&] { return referenceLoss(wte, bias); };
  const Vec wantW = finiteDiff(wte, loss), wantB = finiteDiff(bias, loss);
  const auto *grads = static_cast<const float *>(ctx.arenaBase(FX_GRADS));
  std::vector<float> gotW(grads + FX_WTE / 4, grads + FX_WTE / 4 + FX_VP * FX_C);
  std::vector<float> gotB(grads + FX_BIAS / 4, grads + FX_BIAS / 4 + FX_VP);
  EXPECT_REL_NEAR(gotW, wantW, 1e-4);
  EXPECT_REL_NEAR(gotB, wantB, 1e-4);
  for (int i = FX_V * FX_C; i < FX_VP * FX_C; ++i)
    EXPECT_EQ(gotW[i], 0.0f) << "padding rows get no gradient";

  // A second micro-batch with loss scale 1/2 accumulates half a gradient.
  ctx.setLossScale(0.5f);
  artifact.run(EntryKind::TrainStep, ctx);
  for (int i = 0; i < FX_VP; ++i)
    EXPECT_NEAR(grads[FX_BIAS / 4 + i], 1.5 * wantB[i], 1e-6);
}

TEST_F(ArtifactTest, TrainingLowersTheLoss) {
  ctx.setLearningRate(0.05f);
  float first = 0, last = 0, norm = 0;
  for (int step = 1; step <= 40; ++step) {
    artifact.run(EntryKind::TrainStep, ctx);
    last = readScalarOutput(ctx, m(), EntryKind::TrainStep, "loss");
    if (step == 1)
      first = last;
    ctx.setStep(step);
    artifact.run(EntryKind::OptimizerStep, ctx);
    norm = readScalarOutput(ctx, m(), EntryKind::OptimizerStep, "grad_norm");
    EXPECT_GT(norm, 0.0f);
  }
  EXPECT_LT(last, 0.5f * first) << "first " << first << ", last " << last;
  const auto *grads = static_cast<const unsigned char *>(ctx.arenaBase(FX_GRADS));
  for (int i = 0; i < FX_PARAMS_SIZE; ++i)
    ASSERT_EQ(grads[i], 0) << "optimizer_step zeroes the grads";
  const std::vector<float> wte = paramValues<float>(ctx, m(), "wte");
  for (int i = FX_V * FX_C; i < FX_VP * FX_C; ++i)
    EXPECT_EQ(wte[i], 0.0f) << "padding rows stay zero";
  const std::vector<float> ln = paramValues<float>(ctx, m(), "ln_f.weight");
  EXPECT_EQ(ln, std::vector<float>(FX_C, 1.0f)) << "no gradient, no decay";
}

TEST_F(ArtifactTest, LogitsEntry) {
  writeBatch(ctx, m(), EntryKind::Logits, kTokens.data(), nullptr, FX_B, FX_T);
  artifact.run(EntryKind::Logits, ctx);
  const std::vector<float> got =
      readOutput(ctx, m(), EntryKind::Logits, "logits");
  std::vector<float> want;
  referenceLoss(paramValues<float>(ctx, m(), "wte"),
                paramValues<float>(ctx, m(), "head.bias"), &want);
  EXPECT_EQ(got, want);
}

TEST_F(ArtifactTest, KernelErrorsSurfaceAfterTheEntryReturns) {
  // Bypass writeBatch's vocabulary check, as corrupt data would.
  auto *targets = reinterpret_cast<int32_t *>(
      static_cast<char *>(ctx.arenaBase(FX_INPUTS)) + FX_TARGETS);
  targets[0] = 7;
  EXPECT_ERROR(artifact.run(EntryKind::EvalStep, ctx),
               "eval_step of artifact " + fixture("fixture-ok") +
                   ": gptrt_cross_entropy_fwd: cross-entropy: target 7 of "
                   "row 0 outside [0, 6)");
  EXPECT_FALSE(ctx.failed());
  targets[0] = kTargets[0];
  EXPECT_NO_THROW(artifact.run(EntryKind::EvalStep, ctx));
}

TEST_F(ArtifactTest, OptimizerWithoutStepFails) {
  EXPECT_ERROR(artifact.run(EntryKind::OptimizerStep, ctx),
               "optimizer_step of artifact " + fixture("fixture-ok") +
                   ": gptrt_adamw: step scalar is 0.000000");
}

TEST_F(ArtifactTest, RunRejectsAContextOfAnotherManifest) {
  mf::Manifest other = fixtureManifest();
  other.mutable_arenas(FX_ACT)->set_size(FX_ACT_SIZE / 2);
  Context small(other);
  EXPECT_ERROR(artifact.run(EntryKind::TrainStep, small),
               "the context given to train_step of artifact " +
                   fixture("fixture-ok") + " has other arenas than its "
                                           "manifest");
}

TEST_F(ArtifactTest, MovedArtifactStillRuns) {
  Artifact moved(std::move(artifact));
  EXPECT_NO_THROW(moved.run(EntryKind::EvalStep, ctx));
  EXPECT_FALSE(artifact.hasEntry(EntryKind::EvalStep));
  EXPECT_ERROR(artifact.entry(EntryKind::EvalStep),
               "has no eval_step entry");
}

// ------------------------------------------------------------ load errors

TEST(ArtifactLoadTest, MissingFile) {
  EXPECT_ERROR(Artifact("/nonexistent/tiny.so"),
               "artifact /nonexistent/tiny.so does not exist: check the path");
}

TEST(ArtifactLoadTest, Directory) {
  TempDir dir;
  EXPECT_ERROR(Artifact{dir.path()},
               "artifact " + dir.path() +
                   " is not a regular file, expected a .so written by gptc");
}

TEST(ArtifactLoadTest, NotASharedObject) {
  TempDir dir;
  writeBytes(dir.file("tiny.so"), "this is not an ELF file\n");
  const std::string msg = errorOf([&] { Artifact a(dir.file("tiny.so")); });
  EXPECT_EQ(msg, "artifact " + dir.file("tiny.so") +
                     " cannot be loaded: it is 24 bytes, shorter than an ELF "
                     "header; rebuild it with gptc -o FILE.so");
  writeBytes(dir.file("text.so"),
             std::string(200, 'x') + "this is not an ELF file either\n");
  EXPECT_ERROR(Artifact(dir.file("text.so")),
               "artifact " + dir.file("text.so") +
                   " cannot be loaded: it does not start with the ELF magic "
                   "bytes (not a shared object); rebuild it with gptc -o "
                   "FILE.so");
}

// A truncated artifact is refused before dlopen maps it: touching a page
// past the file's end would be a SIGBUS with nothing on stderr. Cut at
// every eighth of the file, the refusal names what lies past the end.
TEST(ArtifactLoadTest, TruncatedSharedObject) {
  const std::string whole = readBytes(fixture("fixture-ok"));
  ASSERT_GT(whole.size(), 1024u);
  TempDir dir;
  for (size_t eighth = 1; eighth < 8; ++eighth) {
    const std::string path = dir.file("cut" + std::to_string(eighth) + ".so");
    writeBytes(path, whole.substr(0, whole.size() * eighth / 8));
    const std::string msg = errorOf([&] { Artifact a(path); });
    EXPECT_THAT(msg, ::testing::StartsWith("artifact " + path +
                                           " cannot be loaded: its "));
    EXPECT_THAT(msg, ::testing::HasSubstr(
                         "truncated; rebuild it with gptc -o FILE.so"));
  }
  // The whole file loads.
  EXPECT_NO_THROW(Artifact a(fixture("fixture-ok")));
}

TEST(ArtifactLoadTest, AbiVersionMismatch) {
  EXPECT_ERROR(Artifact(fixture("fixture-abi99")),
               "artifact " + fixture("fixture-abi99") +
                   " was built for runtime ABI 99, this runtime speaks " +
                   std::to_string(GPTRT_ABI_VERSION) +
                   ": rebuild it with the gptc that matches this runtime");
}

TEST(ArtifactLoadTest, ManifestAbiVersionMismatch) {
  EXPECT_ERROR(Artifact(fixture("fixture-manifest-abi")),
               "its manifest says runtime ABI " +
                   std::to_string(GPTRT_ABI_VERSION + 100) +
                   " while gpt_abi_version() says " +
                   std::to_string(GPTRT_ABI_VERSION) + ", expected both " +
                   std::to_string(GPTRT_ABI_VERSION));
}

TEST(ArtifactLoadTest, ManifestDoesNotParse) {
  EXPECT_ERROR(Artifact(fixture("fixture-garbage")),
               "its manifest (19 bytes) does not parse as "
               "gptc.manifest.Manifest");
}

TEST(ArtifactLoadTest, InvalidManifest) {
  EXPECT_ERROR(Artifact(fixture("fixture-invalid")),
               "artifact " + fixture("fixture-invalid") +
                   ": param 'wte' value buffer end (offset 256 + 128 bytes) "
                   "is 384, expected <= 256");
}

TEST(ArtifactLoadTest, MissingEntrySymbol) {
  EXPECT_ERROR(Artifact(fixture("fixture-no-logits")),
               "declares entry logits = 'gpt_logits' but does not export "
               "that symbol");
}

TEST(ArtifactLoadTest, UnknownRuntimeFunction) {
  EXPECT_ERROR(Artifact(fixture("fixture-unknown-call")),
               "needs a runtime function this runtime lacks");
}

// A shared object gptc did not write has no manifest section: refused
// before dlopen runs its initialisers.
TEST(ArtifactLoadTest, NotAGptcArtifact) {
  EXPECT_ERROR(Artifact(fixture("not-an-artifact")),
               "artifact " + fixture("not-an-artifact") +
                   " cannot be loaded: it has no .gptc_manifest section (a "
                   "shared object gptc did not write, or one from a gptc "
                   "older than this runtime); rebuild it with gptc -o FILE.so");
}

// A manifest changed after gptc wrote it (its checksum no longer matches)
// is refused before dlopen.
TEST(ArtifactLoadTest, ManifestChecksumMismatch) {
  const std::string msg =
      errorOf([&] { Artifact a(fixture("fixture-checksum")); });
  EXPECT_THAT(msg, ::testing::StartsWith("artifact " +
                                         fixture("fixture-checksum") +
                                         " cannot be loaded: its manifest's "
                                         "checksum is "));
  EXPECT_THAT(msg, ::testing::HasSubstr(
                       " (the file was altered after gptc wrote it); rebuild "
                       "it with gptc -o FILE.so"));
}

// The same for a byte flipped in a copy of a good artifact's manifest, and
// a section header that claims more bytes than the section holds.
TEST(ArtifactLoadTest, AlteredManifestBytesAreFound) {
  const std::string whole = readBytes(fixture("fixture-ok"));
  const size_t header = whole.find("GPTCMAN1");
  ASSERT_NE(header, std::string::npos);
  TempDir dir;
  std::string flipped = whole;
  flipped[header + manifest_section::kHeaderBytes + 3] ^= 0x40;
  writeBytes(dir.file("flipped.so"), flipped);
  EXPECT_THAT(errorOf([&] { Artifact a(dir.file("flipped.so")); }),
              ::testing::HasSubstr("its manifest's checksum is "));
  std::string longer = whole;
  longer[header + 8 + 5] = 1; // the payload size's sixth byte: ~2^40 bytes
  writeBytes(dir.file("longer.so"), longer);
  EXPECT_THAT(errorOf([&] { Artifact a(dir.file("longer.so")); }),
              ::testing::HasSubstr("its manifest header says "));
}

} // namespace
} // namespace gptrt::test
