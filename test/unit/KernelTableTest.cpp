// The compiler's view of the kernel table (dialects/rt/KernelTable.h) agrees
// with the rows of runtime/abi/gptrt_kernels.def and with the calling
// convention rt-to-llvm relies on.
#include "dialects/rt/KernelTable.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gptc::rt {
namespace {

TEST(KernelTableTest, LooksUpRowsByName) {
  const KernelSignature *row = lookupKernel("layernorm_fwd");
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(row->isKernel);
  // x, w, b and the epilogue's scale; out (which the dual cast leaves
  // out), mean, rstd and the epilogue's amax, q, q_t.
  ASSERT_EQ(row->inputs().size(), 4u);
  EXPECT_STREQ(row->inputs()[1].name, "w");
  EXPECT_EQ(row->inputs()[0].element, KernelElement::Any);
  EXPECT_EQ(row->inputs()[1].element, KernelElement::F32);
  EXPECT_FALSE(row->inputs()[2].optional);
  EXPECT_TRUE(row->inputs()[3].optional);
  ASSERT_EQ(row->outputs().size(), 6u);
  EXPECT_STREQ(row->outputs()[0].name, "out");
  EXPECT_TRUE(row->outputs()[0].optional);
  EXPECT_FALSE(row->outputs()[1].optional);
  EXPECT_EQ(row->outputIndex("q_t"), 5u);
  EXPECT_EQ(row->inputIndex("scale"), 3u);
  ASSERT_EQ(row->constants().size(), 6u);
  EXPECT_EQ(row->constants()[2].kind, KernelParamKind::F64);
  EXPECT_EQ(row->constantIndex("eps"), 2u);
  EXPECT_EQ(row->constantIndex("x_dtype"), 3u);
  EXPECT_FALSE(row->constantIndex("x").has_value()) << "x is a buffer";
  const KernelParam &epilogue = row->constants().back();
  EXPECT_EQ(epilogue.kind, KernelParamKind::Descriptor);
  EXPECT_TRUE(epilogue.optional);
  ASSERT_NE(epilogue.descriptor, nullptr);
  EXPECT_EQ(epilogue.descriptor->name, "epilogue");
  ASSERT_NE(epilogue.descriptor->field("stat_slot"), nullptr);
  EXPECT_EQ(epilogue.descriptor->field("stat_slot")->defaultValue, -1);
  EXPECT_EQ(epilogue.descriptor->field("format")->defaultValue, 0);
  EXPECT_EQ(epilogue.descriptor->field("stride"), nullptr);
  EXPECT_EQ(lookupKernel("layernorm_forward"), nullptr);

  const KernelSignature *table = lookupKernel("adamw_multi");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->constants().back().kind, KernelParamKind::I64Table);
  // The one GEMM: operands of any element (the descriptor's a_dtype and
  // b_dtype say which), FP8 codes out of its cast, and two descriptors --
  // its own, always passed, then the optional output epilogue, last.
  const KernelSignature *gemm = lookupKernel("gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->inputs()[0].element, KernelElement::Any);
  ASSERT_EQ(gemm->outputIndex("q"), 4u);
  EXPECT_EQ(gemm->outputs()[4].element, KernelElement::Fp8);
  ASSERT_EQ(gemm->constants().size(), 2u);
  const KernelParam &desc = gemm->constants()[0];
  EXPECT_EQ(desc.kind, KernelParamKind::Descriptor);
  EXPECT_FALSE(desc.optional);
  ASSERT_NE(desc.descriptor, nullptr);
  EXPECT_EQ(desc.descriptor->name, "gemm_desc");
  ASSERT_NE(desc.descriptor->field("batch"), nullptr);
  EXPECT_EQ(desc.descriptor->field("batch")->defaultValue, 1);
  ASSERT_NE(desc.descriptor->field("fast_accum"), nullptr);
  EXPECT_EQ(desc.descriptor->field("fast_accum")->defaultValue, 0);
  EXPECT_EQ(gemm->constants()[1].kind, KernelParamKind::Descriptor);
  EXPECT_TRUE(gemm->constants()[1].optional);
  EXPECT_EQ(lookupKernel("scaled_matmul"), nullptr);
  EXPECT_EQ(lookupKernel("matmul_bf16"), nullptr);
}

TEST(KernelTableTest, ArenaBaseIsAnEntryNotAKernel) {
  const KernelSignature *row = lookupKernel("arena_base");
  ASSERT_NE(row, nullptr);
  EXPECT_FALSE(row->isKernel);
  EXPECT_EQ(row->constants().size(), 1u);
}

// rt.kernel passes ins, then outs, then constants (rt-to-llvm), so every
// row must list its parameters in that order; names are unique per row and
// rows are unique by name.
TEST(KernelTableTest, EveryRowFollowsTheCallingConvention) {
  std::set<std::string> names;
  ASSERT_GE(kernelTable().size(), 25u);
  for (const KernelSignature &row : kernelTable()) {
    SCOPED_TRACE(row.name.str());
    EXPECT_TRUE(names.insert(row.name.str()).second) << "duplicate row";
    EXPECT_EQ(row.inputs().size() + row.outputs().size() +
                  row.constants().size(),
              row.params.size())
        << "a buffer after a constant, or an input after an output";
    if (row.isKernel)
      EXPECT_FALSE(row.outputs().empty()) << "a kernel writes something";
    std::set<std::string> params;
    for (const KernelParam &param : row.params) {
      EXPECT_TRUE(params.insert(param.name).second)
          << "parameter " << param.name << " twice";
      EXPECT_EQ(param.isBuffer(), param.element != KernelElement::None);
      // rt-to-llvm passes a left-out descriptor as null: an optional one
      // (GPTRT_DESC_OPT) must be last.
      if (param.kind == KernelParamKind::Descriptor) {
        if (param.optional)
          EXPECT_EQ(&param, &row.params.back())
              << "an optional descriptor is last";
        EXPECT_NE(param.descriptor, nullptr);
      }
      if (!param.isBuffer() && param.kind != KernelParamKind::Descriptor)
        EXPECT_FALSE(param.optional) << param.name;
    }
    // A row's required outputs: a kernel that may leave every output out
    // would write nothing.
    bool requiredOutput = !row.isKernel;
    for (const KernelParam &out : row.outputs())
      requiredOutput |= !out.optional;
    if (row.name == "gelu_fwd" || row.name == "gelu_bwd")
      continue; // out / dx, or q (the dual cast): the verifier's rule
    EXPECT_TRUE(requiredOutput) << "every output optional";
  }
}

} // namespace
} // namespace gptc::rt
