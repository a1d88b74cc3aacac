// The DSL names layers from its scopes and builds modules that verify.
#include "compiler/dsl/ModelBuilder.h"
#include "dialects/gpt/GptDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace gptc::dsl;

namespace {

TEST(ModelBuilder, ScopesNameLayersAndParameters) {
  mlir::MLIRContext context;
  ModelBuilder m(context, "mini");
  Tensor x = m.input("x", {mlir::ShapedType::kDynamic, 8, 16},
                     mlir::Float32Type::get(&context));
  Tensor y;
  {
    ModelBuilder::Scope block = m.scope("h.0");
    EXPECT_EQ(m.layerName("mlp"), "h.0.mlp");
    ModelBuilder::Scope mlp = m.scope("mlp");
    y = m.linear("fc", x, 32, 0.02);
    EXPECT_EQ(m.layerName(), "h.0.mlp");
  }
  EXPECT_EQ(m.layerName(), "");
  auto module = m.finish({{"y", y}});
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());

  auto weight = (*module)->lookupSymbol<gptc::gpt::ParamOp>("h.0.mlp.fc.weight");
  ASSERT_TRUE(weight);
  EXPECT_EQ(weight.getLayer(), "h.0.mlp.fc");
  EXPECT_EQ(weight.getTensorType().getShape(), llvm::ArrayRef<int64_t>({32, 16}));
  EXPECT_EQ(weight.getInit()->getKind(), gptc::gpt::InitKind::Normal);
  auto bias = (*module)->lookupSymbol<gptc::gpt::ParamOp>("h.0.mlp.fc.bias");
  ASSERT_TRUE(bias);
  EXPECT_EQ(bias.getInit()->getKind(), gptc::gpt::InitKind::Zeros);

  gptc::gpt::MatmulOp matmul;
  (*module)->walk([&](gptc::gpt::MatmulOp op) { matmul = op; });
  ASSERT_TRUE(matmul);
  EXPECT_EQ(matmul.getLayer(), "h.0.mlp.fc");
  EXPECT_TRUE(matmul.getTransposeB());
  EXPECT_EQ(matmul.getType().getShape(),
            llvm::ArrayRef<int64_t>({mlir::ShapedType::kDynamic, 8, 32}));
}

TEST(ModelBuilder, InvalidModelIsAnErrorNotACrash) {
  mlir::MLIRContext context;
  // Keep the verifier's diagnostic off the test output.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  ModelBuilder m(context, "bad");
  Tensor x = m.input("x", {2, 8, 12}, mlir::Float32Type::get(&context));
  // 12 is not divisible by 5 heads.
  Tensor y = m.causalSelfAttention(x, x, x, /*heads=*/5);
  auto module = m.finish({{"y", y}});
  ASSERT_FALSE(static_cast<bool>(module));
  EXPECT_NE(llvm::toString(module.takeError()).find("does not verify"),
            std::string::npos);
}

} // namespace
