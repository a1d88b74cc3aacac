// validateManifest: the fixture manifest passes, and each way of breaking it
// is reported by one line naming the value, what was found and expected.
#include "runtime/core/ManifestCheck.h"
#include "test/unit/runtime/TempDir.h"
#include "test/unit/runtime/fixtures/FixtureManifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

namespace gptrt::test {
namespace {

using Mutation = std::function<void(mf::Manifest &)>;

std::string errorAfter(const Mutation &mutate) {
  mf::Manifest m = fixtureManifest();
  mutate(m);
  return errorOf([&] { validateManifest(m, "artifact tiny.so"); });
}

#define EXPECT_INVALID(mutation, message)                                      \
  EXPECT_THAT(errorAfter([](mf::Manifest & m) { mutation; }),                  \
              ::testing::HasSubstr(message))

TEST(ManifestTest, FixtureManifestIsValid) {
  EXPECT_NO_THROW(validateManifest(fixtureManifest(), "fixture"));
}

TEST(ManifestTest, HelpersReportSizesAndNames) {
  mf::Manifest m = fixtureManifest();
  EXPECT_EQ(dtypeSize(mf::F32), 4u);
  EXPECT_EQ(dtypeSize(mf::BF16), 2u);
  EXPECT_EQ(dtypeSize(mf::F8E4M3), 1u);
  EXPECT_EQ(dtypeSize(mf::DTYPE_UNSPECIFIED), 0u);
  EXPECT_EQ(bufferBytes(m.params(0).value()), uint64_t(FX_VP * FX_C * 4));
  EXPECT_EQ(numElements(m.train_step().outputs(0).buffer().shape()), 1);
  EXPECT_EQ(shapeString(m.params(0).shape()), "[8, 4]");
  EXPECT_EQ(findParam(m, "head.bias"), &m.params(1));
  EXPECT_EQ(findParam(m, "nope"), nullptr);
  EXPECT_STREQ(entryName(EntryKind::OptimizerStep), "optimizer_step");
  EXPECT_EQ(&entrySpec(m, EntryKind::Logits), &m.logits());
  EXPECT_TRUE(hasEntry(m, EntryKind::EvalStep));
  m.mutable_eval_step()->Clear();
  EXPECT_FALSE(hasEntry(m, EntryKind::EvalStep));
  EXPECT_NO_THROW(validateManifest(m, "fixture"))
      << "entries are optional; running a missing one is the error";
}

TEST(ManifestTest, MessageHasSourceValueExpectedAndFix) {
  EXPECT_EQ(errorAfter([](mf::Manifest &m) { m.set_micro_batch(0); }),
            "artifact tiny.so: micro_batch is 0, expected >= 1: this is a "
            "gptc bug; rebuild the artifact with a fixed gptc");
}

TEST(ManifestTest, TopLevelErrors) {
  EXPECT_INVALID(m.set_abi_version(GPTRT_ABI_VERSION + 100),
                 "manifest abi_version is " +
                     std::to_string(GPTRT_ABI_VERSION + 100) + ", expected " +
                     std::to_string(GPTRT_ABI_VERSION) +
                     " (this runtime's ABI): rebuild the artifact with the "
                     "gptc that matches this runtime");
  // A manifest from a gptc built with another kernel table, or from before
  // fingerprints were recorded (0).
  EXPECT_INVALID(m.set_kernel_table_fingerprint(kKernelTableFingerprint ^ 2),
                 "manifest kernel_table_fingerprint is 0x");
  EXPECT_INVALID(m.set_kernel_table_fingerprint(0),
                 "manifest kernel_table_fingerprint is 0x0000000000000000, "
                 "expected 0x");
  EXPECT_INVALID(m.set_kernel_table_fingerprint(0),
                 " (this runtime's runtime/abi/gptrt_kernels.def): the "
                 "artifact was compiled against another kernel table; "
                 "rebuild it with the gptc that matches this runtime");
  EXPECT_INVALID(m.set_seq(0), "seq is 0, expected >= 1");
  EXPECT_INVALID(m.set_seq(FX_T + 1),
                 "seq is 4, expected <= model.seq = 3 (the model's context "
                 "length)");
  EXPECT_INVALID(m.mutable_model()->set_padded_vocab(5),
                 "model.padded_vocab is 5, expected >= model.vocab = 6");
}

TEST(ManifestTest, ArenaErrors) {
  EXPECT_INVALID(m.mutable_arenas(3)->set_kind(mf::ARENA_KIND_UNSPECIFIED),
                 "arena 3 ('activations') kind is ARENA_KIND_UNSPECIFIED, "
                 "expected one of ACTIVATIONS");
  EXPECT_INVALID(m.mutable_arenas(0)->set_alignment(48),
                 "arena 0 ('params') alignment is 48, expected 0 (default) or "
                 "a power of two");
}

TEST(ManifestTest, BufferErrors) {
  EXPECT_INVALID(m.mutable_params(0)->mutable_value()->set_arena(9),
                 "param 'wte' value buffer arena index is 9, expected < 5 "
                 "(the arena count)");
  EXPECT_INVALID(m.mutable_params(0)->mutable_value()->set_offset(192),
                 "param 'wte' value buffer end (offset 192 + 128 bytes) is "
                 "320, expected <= 256, the size of arena 'params'");
  EXPECT_INVALID(m.mutable_params(1)->mutable_grad()->set_offset(132),
                 "param 'head.bias' grad buffer offset is 132, expected a "
                 "multiple of arena 'grads' alignment 64");
  EXPECT_INVALID(
      m.mutable_params(0)->mutable_adam_m()->set_dtype(mf::DTYPE_UNSPECIFIED),
      "param 'wte' adam_m buffer dtype is 0, expected one of F32, BF16");
  EXPECT_INVALID(
      m.mutable_train_step()->mutable_outputs(0)->mutable_buffer()->add_shape(
          -2),
      "entry train_step output 'loss' shape is [-2], expected dimensions >= 0");
}

TEST(ManifestTest, ParamBufferErrors) {
  EXPECT_INVALID(m.mutable_params(0)->mutable_value()->set_shape(0, 4),
                 "param 'wte' value buffer shape is [4, 4], expected [8, 4], "
                 "the param's shape");
  EXPECT_INVALID(m.mutable_params(0)->mutable_value()->set_dtype(mf::BF16),
                 "param 'wte' value buffer dtype is bf16, expected f32");
  EXPECT_INVALID(m.mutable_params(1)->mutable_grad()->set_dtype(mf::I32),
                 "param 'head.bias' grad buffer dtype is i32, expected f32 or "
                 "bf16");
  EXPECT_INVALID(m.mutable_params(0)->mutable_grad()->set_arena(FX_PARAMS),
                 "param 'wte' grad arena 'params' kind is PARAMS, expected "
                 "GRADS");
  EXPECT_INVALID(m.mutable_params(2)->clear_value(),
                 "param 'ln_f.weight' value buffer is missing, expected a "
                 "buffer in the PARAMS arena");
  EXPECT_INVALID(m.mutable_params(2)->mutable_value()->set_offset(128),
                 "param 'head.bias' value buffer (bytes 128..160) is "
                 "overlapping param 'ln_f.weight' value (bytes 128..144), "
                 "expected disjoint parameter buffers");
}

TEST(ManifestTest, ParamErrors) {
  EXPECT_INVALID(m.mutable_params(1)->set_name("wte"),
                 "param name 'wte' is used twice, expected unique names");
  EXPECT_INVALID(m.mutable_params(1)->set_name(""),
                 "a param name is empty, expected a unique non-empty name");
  EXPECT_INVALID(m.mutable_params(1)->clear_shape(),
                 "param 'head.bias' shape is [], expected rank >= 1");
  EXPECT_INVALID(m.mutable_params(1)->set_shape(0, 0),
                 "param 'head.bias' shape is [0], expected dimensions >= 1");
  EXPECT_INVALID(
      m.mutable_params(1)->mutable_init()->set_kind(mf::Init::KIND_UNSPECIFIED),
      "param 'head.bias' init kind is KIND_UNSPECIFIED, expected NORMAL, "
      "ZEROS or ONES");
  EXPECT_INVALID(m.mutable_params(0)->mutable_init()->set_std(-1),
                 "param 'wte' init std is -1.000000, expected a finite value "
                 ">= 0");
  EXPECT_INVALID(m.mutable_params(0)->set_real_rows(9),
                 "param 'wte' real_rows is 9, expected 0 (all rows real) .. 8 "
                 "(its first dimension)");
}

TEST(ManifestTest, TiedParamErrors) {
  EXPECT_INVALID(*m.mutable_params(3)->mutable_value() = m.params(0).value(),
                 "param 'head.weight' (tied to 'wte') buffers is present, "
                 "expected none: a tied param uses the buffers of the one it "
                 "is tied to");
  EXPECT_INVALID(m.mutable_params(3)->set_tied_to("wpe"),
                 "param 'head.weight' tied_to is 'wpe', expected the name of "
                 "another param");
  EXPECT_INVALID(
      {
        m.mutable_params(3)->set_tied_to("head.bias");
        m.mutable_params(3)->clear_shape();
        m.mutable_params(3)->add_shape(FX_VP);
        m.mutable_params(3)->set_real_rows(0);
        mf::Param *chain = m.add_params();
        chain->set_name("chained");
        chain->add_shape(FX_VP);
        chain->set_tied_to("head.weight");
      },
      "param 'chained' tied_to is 'head.weight', itself tied to 'head.bias', "
      "expected an untied param (no chains)");
  EXPECT_INVALID(m.mutable_params(3)->set_shape(1, 5),
                 "param 'head.weight' shape is [8, 5], expected [8, 4], the "
                 "shape of 'wte' it is tied to");
}

TEST(ManifestTest, EntryErrors) {
  EXPECT_INVALID(*m.mutable_train_step()->add_inputs() =
                     m.train_step().inputs(0),
                 "entry train_step input 'tokens' is listed twice, expected "
                 "unique names");
  EXPECT_INVALID(m.mutable_eval_step()
                     ->mutable_inputs(1)
                     ->mutable_buffer()
                     ->set_dtype(mf::F32),
                 "entry eval_step input 'targets' is f32 [2, 3], expected i32 "
                 "of rank 2 [batch, seq]");
  EXPECT_INVALID(m.mutable_train_step()
                     ->mutable_outputs(0)
                     ->mutable_buffer()
                     ->add_shape(2),
                 "entry train_step output 'loss' is f32 [2], expected one f32");
  EXPECT_INVALID(m.mutable_logits()->mutable_outputs(0)->mutable_buffer()
                     ->set_dtype(mf::BF16),
                 "entry logits output 'logits' dtype is bf16, expected f32");
  EXPECT_INVALID(m.mutable_logits()->set_symbol(""),
                 "entry logits symbol is empty while it lists buffers, "
                 "expected the name of the exported function");
  EXPECT_INVALID(m.mutable_optimizer_step()->mutable_outputs(0)->set_name(""),
                 "entry optimizer_step output name is empty");
  EXPECT_INVALID(
      m.mutable_optimizer_step()->mutable_outputs(0)->clear_buffer(),
      "entry optimizer_step output 'grad_norm' buffer is missing");
}

} // namespace
} // namespace gptrt::test
