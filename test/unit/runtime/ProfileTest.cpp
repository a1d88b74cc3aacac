// gptrun --profile-step's parts: Context timing each outermost gptrt_*
// call (a fused CPU kernel's inner calls and a base kernel + epilogue
// pair counted once, under the exported name), and the per-function
// summary, table and JSON built from those calls.
#include "runtime/train/Profile.h"
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "test/unit/runtime/Epilogue.h"
#include "test/unit/runtime/Gemm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gptrt {
namespace {

using test::epilogue;

TEST(ProfileTest, ContextTimesEachOutermostCallOnce) {
  Context ctx(Device::Cpu, {});
  gptrt_context *h = ctx.handle();
  const int64_t rows = 8, cols = 16, n = rows * cols;
  std::vector<float> x(n), amax(rows), scales(rows), y(n);
  std::vector<uint8_t> q(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.25f * float(i % 13) - 1.0f;
  gptrt_fill(h, y.data(), n, 1.0); // before the profile: not recorded
  ctx.beginProfile();
  EXPECT_TRUE(ctx.profiling());
  // Three CPU kernels inside one guarded call.
  gptrt_amax_quantize_rows(h, x.data(), amax.data(), scales.data(), q.data(),
                           rows, cols, GPTRT_FP8_E4M3, -1, GPTRT_DTYPE_F32,
                           448.0, 0, 0, 1e-12);
  // A base kernel and its epilogue, two guarded calls.
  float scale = 8.0f, castAmax = 0;
  std::vector<uint16_t> y16(n);
  gptrt_convert(h, x.data(), &scale, y16.data(), &castAmax, q.data(), n,
                GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16,
                epilogue(rows, cols, GPTRT_DTYPE_BF16, GPTRT_FP8_E4M3, 0, -1));
  gptrt_fill(h, y.data(), n, 2.0);
  const std::vector<Context::ProfiledCall> calls = ctx.endProfile();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  EXPECT_FALSE(ctx.profiling());
  std::vector<std::string> names;
  for (const Context::ProfiledCall &call : calls) {
    names.push_back(call.name);
    EXPECT_GE(call.ms, 0.0) << call.name;
  }
  EXPECT_THAT(names,
              ::testing::ElementsAre("gptrt_amax_quantize_rows",
                                     "gptrt_convert+cast", "gptrt_fill"));
  EXPECT_EQ(castAmax, 2.0f); // the epilogue ran
  // A new profile starts empty; calls after its end are not recorded.
  ctx.beginProfile();
  EXPECT_TRUE(ctx.endProfile().empty());
  gptrt_fill(h, y.data(), n, 3.0);
  ctx.beginProfile();
  EXPECT_TRUE(ctx.endProfile().empty());
}

// gptrt_gemm is profiled under its form: the operands, then each epilogue
// the call asks for (bias, GELU, GELU gradient, bias gradient,
// accumulation), then the output epilogue.
TEST(ProfileTest, GemmCallsAreNamedByTheirForm) {
  Context ctx(Device::Cpu, {});
  gptrt_context *h = ctx.handle();
  const int64_t m = 2, n = 8, k = 4;
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n), bias(n, 1.0f),
      pre(m * n), db(m), grad(m * n, 0.0f);
  // bf16 codes of 0.5 and 0.25.
  std::vector<uint16_t> a16(m * k, 0x3F00), b16(k * n, 0x3E80),
      dy16(k * m, 0x3F00);
  std::vector<uint8_t> a8(m * k, 0x38), b8(k * n, 0x38), q(m * n); // E4M3 1.0
  std::vector<float> rowScales(m, 1.0f);
  const float one = 1.0f, scale = 2.0f;
  float amax = 0;
  ctx.beginProfile();
  const gptrt_gemm_desc f32 = test::gemmDesc(1, m, n, k, 0, 0, 0, 0, 0);
  gptrt_gemm(h, a.data(), b.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
             c.data(), nullptr, nullptr, &amax, nullptr, &f32,
             epilogue(m, n, GPTRT_DTYPE_F32));
  gptrt_gemm_desc gelu =
      test::bf16Gemm(1, m, n, k, 0, 0, 0, 0, 0, GPTRT_DTYPE_F32);
  gelu.gelu_pre_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, a16.data(), b16.data(), nullptr, nullptr, bias.data(), nullptr,
             nullptr, c.data(), pre.data(), nullptr, nullptr, nullptr, &gelu,
             nullptr);
  // The weight gradient's GEMM: a stored [k, m].
  gptrt_gemm_desc bgrad =
      test::bf16Gemm(1, m, n, k, 1, 0, 0, 0, 0, GPTRT_DTYPE_F32_ACCUMULATE);
  bgrad.dbias_dtype = GPTRT_DTYPE_F32;
  gptrt_gemm(h, dy16.data(), b16.data(), nullptr, nullptr, nullptr, nullptr,
             nullptr, grad.data(), nullptr, db.data(), nullptr, nullptr, &bgrad,
             nullptr);
  const gptrt_gemm_desc fp8 =
      test::fp8Gemm(1, m, n, k, 0, 0, 0, 0, 0, GPTRT_FP8_E4M3, GPTRT_FP8_E4M3,
                    0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a8.data(), b8.data(), &one, &one, nullptr, nullptr, &scale,
             c.data(), nullptr, nullptr, &amax, q.data(), &fp8,
             epilogue(m, n, GPTRT_DTYPE_F32, GPTRT_FP8_E4M3));
  const gptrt_gemm_desc rowwise =
      test::fp8RowwiseGemm(1, m, n, k, 0, 0, 0, 0, 0, GPTRT_FP8_E4M3,
                           GPTRT_FP8_E4M3, 0, 1, 0, GPTRT_DTYPE_F32);
  gptrt_gemm(h, a8.data(), b8.data(), rowScales.data(), &one, bias.data(),
             nullptr, nullptr, c.data(), nullptr, nullptr, nullptr, nullptr,
             &rowwise, nullptr);
  const std::vector<Context::ProfiledCall> calls = ctx.endProfile();
  ASSERT_FALSE(ctx.failed()) << ctx.error();
  std::vector<std::string> names;
  for (const Context::ProfiledCall &call : calls)
    names.push_back(call.name);
  EXPECT_THAT(names, ::testing::ElementsAre(
                         "gptrt_gemm.f32+amax", "gptrt_gemm.bf16+bias+gelu",
                         "gptrt_gemm.bf16+dbias+accumulate",
                         "gptrt_gemm.fp8+cast", "gptrt_gemm.fp8_rowwise+bias"));
}

TEST(ProfileTest, SummaryTableAndJson) {
  const std::vector<Context::ProfiledCall> calls = {
      {"gptrt_gelu_fwd", 1.0},    {"gptrt_gemm.fp8+bias", 4.0},
      {"gptrt_gelu_fwd", 2.0},    {"gptrt_gemm.fp8+bias", 5.0},
      {"gptrt_adamw_multi", 0.5}, {"gptrt_fill", 0.25}};
  const std::vector<ProfileRow> rows = summariseProfile(calls);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].function, "gptrt_gemm.fp8+bias");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_DOUBLE_EQ(rows[0].ms, 9.0);
  EXPECT_EQ(rows[1].function, "gptrt_gelu_fwd");
  EXPECT_DOUBLE_EQ(rows[1].ms, 3.0);
  EXPECT_EQ(rows[3].function, "gptrt_fill");

  const std::string table = profileTable(rows, 7, /*onGpu=*/false, 2);
  EXPECT_THAT(table, ::testing::HasSubstr(
                         "profile of step 7: 6 runtime calls, 12.750 ms "
                         "timed (host clock around each call)"));
  EXPECT_THAT(table, ::testing::HasSubstr("gptrt_gemm.fp8+bias"));
  EXPECT_THAT(table, ::testing::HasSubstr("70.6%")); // 9 / 12.75
  EXPECT_THAT(table, ::testing::HasSubstr("(2 more functions)"));
  EXPECT_THAT(table, ::testing::Not(::testing::HasSubstr("gptrt_fill")));
  EXPECT_THAT(profileTable(rows, 7, /*onGpu=*/true),
              ::testing::HasSubstr("CUDA events"));

  EXPECT_EQ(profileJson(rows),
            "[{\"function\": \"gptrt_gemm.fp8+bias\", \"calls\": 2, \"ms\": "
            "9}, {\"function\": \"gptrt_gelu_fwd\", \"calls\": 2, \"ms\": 3}, "
            "{\"function\": \"gptrt_adamw_multi\", \"calls\": 1, \"ms\": "
            "0.5}, {\"function\": \"gptrt_fill\", \"calls\": 1, \"ms\": "
            "0.25}]");
  EXPECT_EQ(profileJson({}), "[]");
}

} // namespace
} // namespace gptrt
