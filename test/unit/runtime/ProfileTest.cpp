// gptrun --profile-step's parts: Context timing each outermost gptrt_*
// call (a fused CPU kernel's inner calls and a base kernel + epilogue
// pair counted once, under the exported name), and the per-function
// summary, table and JSON built from those calls.
#include "runtime/train/Profile.h"
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "test/unit/runtime/Epilogue.h"

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

TEST(ProfileTest, SummaryTableAndJson) {
  const std::vector<Context::ProfiledCall> calls = {
      {"gptrt_gelu_fwd", 1.0},    {"gptrt_scaled_matmul", 4.0},
      {"gptrt_gelu_fwd", 2.0},    {"gptrt_scaled_matmul", 5.0},
      {"gptrt_adamw_multi", 0.5}, {"gptrt_fill", 0.25}};
  const std::vector<ProfileRow> rows = summariseProfile(calls);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].function, "gptrt_scaled_matmul");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_DOUBLE_EQ(rows[0].ms, 9.0);
  EXPECT_EQ(rows[1].function, "gptrt_gelu_fwd");
  EXPECT_DOUBLE_EQ(rows[1].ms, 3.0);
  EXPECT_EQ(rows[3].function, "gptrt_fill");

  const std::string table = profileTable(rows, 7, /*onGpu=*/false, 2);
  EXPECT_THAT(table, ::testing::HasSubstr(
                         "profile of step 7: 6 runtime calls, 12.750 ms "
                         "timed (host clock around each call)"));
  EXPECT_THAT(table, ::testing::HasSubstr("gptrt_scaled_matmul"));
  EXPECT_THAT(table, ::testing::HasSubstr("70.6%")); // 9 / 12.75
  EXPECT_THAT(table, ::testing::HasSubstr("(2 more functions)"));
  EXPECT_THAT(table, ::testing::Not(::testing::HasSubstr("gptrt_fill")));
  EXPECT_THAT(profileTable(rows, 7, /*onGpu=*/true),
              ::testing::HasSubstr("CUDA events"));

  EXPECT_EQ(profileJson(rows),
            "[{\"function\": \"gptrt_scaled_matmul\", \"calls\": 2, \"ms\": "
            "9}, {\"function\": \"gptrt_gelu_fwd\", \"calls\": 2, \"ms\": 3}, "
            "{\"function\": \"gptrt_adamw_multi\", \"calls\": 1, \"ms\": "
            "0.5}, {\"function\": \"gptrt_fill\", \"calls\": 1, \"ms\": "
            "0.25}]");
  EXPECT_EQ(profileJson({}), "[]");
}

} // namespace
} // namespace gptrt
