// gemm-bench: times the GEMMs of one GPT-2 training step through gptc's
// runtime -- bf16 against FP8, each in the layout and form gptc's
// train_step calls it -- the gptc side of device-check's per-GEMM table
// (tools/bench/torch_gpt2.py --gemm-table times the same shapes through
// PyTorch).
//
//   gemm-bench --configs 124m,774m --micro-batch 16
//
// For each linear layer (qkv, attn.proj, fc, mlp.proj, lm_head) over
// M = micro-batch x seq tokens, its three GEMMs:
// (each a gptrt_gemm call; its descriptor's operand and result dtypes):
//   fwd    bf16: bf16 x bf16 (x, W^T) -> bf16
//          fp8:  E4M3 x E4M3, fast accumulation -> bf16
//   dgrad  bf16: bf16 x bf16 (dy, W) -> bf16
//          fp8:  E5M2 x E4M3 -> bf16
//   wgrad  bf16: bf16 x bf16 (dy^T, x) added into f32 (c_dtype
//                GPTRT_DTYPE_F32_ACCUMULATE)
//          fp8:  E5M2 x E4M3 added into f32
// FP8 operands are K-contiguous ("TN"), as gptc's casts make them; the
// epilogues (bias, GELU, bias gradient) are left out on both sides.
// "+cast" adds what casting both operands from bf16 costs when nothing is
// fused: gptrt_amax and gptrt_scale_quantize_fp8 of each (torch's +cast
// column does the same). "rw us" is fp8-rowwise's GEMM of the same form
// (GPTRT_SCALING_ROWWISE for both operands, accumulating for wgrad; a scale
// per row of a and per column of b) as the CUDA runtime runs it by default (a
// unit-scale GEMM to f32, then a pass dividing by the scales); "rw-ov
// us" the same call with OUTER_VEC_32F scales inside cuBLASLt (gptrun
// --fp8-rowwise-gemm outer-vec), "ov" after it saying whether cuBLASLt
// took it (else that time is the unscaling path's again). rel err: |fp8 - bf16|
// / |bf16| of the first rows of the fwd-layout product, a few % from FP8
// rounding; about 1.4 would mean wrong operands. Inputs N(0, 1) from a fixed
// seed. Each time is the median over --repeats of a batch of calls (about 10 ms
// of GEMMs, at most 200 calls) between two device synchronisations, per call.
//
// Prints a table and one `RESULT {json}` per GEMM (the fields of
// torch_gpt2.py's); exit 0, 1 on a kernel error or a bad product, 2
// refused (bad flags, or no GPU for --device cuda).
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cuda/Backend.h"
#include "test/unit/runtime/Gemm.h"
#include "tools/bench/BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

const char *const kBenchName = "gemm-bench";

namespace {

using gptc::bench::aligned;
using gptc::bench::positive;
using gptc::bench::refuse;
using gptc::bench::timeCalls;
using gptrt::Context;

struct Options {
  std::string device = "cuda", configs = "124m,774m";
  int64_t microBatch = 16;
  int iters = 0, repeats = 3; // iters 0: sized per shape
};

struct Config {
  const char *name;
  int64_t width, seq;
};

// GPT-2's widths (as torch_gpt2.py's CONFIGS) and the padded vocabulary
// gptc's models use for lm_head.
const Config kConfigs[] = {
    {"tiny", 128, 64}, {"124m", 768, 1024}, {"774m", 1280, 1024}};
constexpr int64_t kPaddedVocab = 50304;

struct Gemm {
  std::string config, name;
  int64_t m, n, k;
  enum Kind { Fwd, Dgrad, Wgrad } kind;
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      refuse(flag + " needs a value (see the header of gemm_bench.cpp)");
    const char *value = argv[++i];
    if (flag == "--device")
      o.device = value;
    else if (flag == "--configs")
      o.configs = value;
    else if (flag == "--micro-batch")
      o.microBatch = positive(flag, value);
    else if (flag == "--iters")
      o.iters = int(positive(flag, value));
    else if (flag == "--repeats")
      o.repeats = int(positive(flag, value));
    else
      refuse("unknown flag " + flag +
             "; expected --device, --configs, "
             "--micro-batch, --iters or --repeats");
  }
  if (o.device != "cuda" && o.device != "cpu")
    refuse("--device '" + o.device + "': expected cuda or cpu");
  return o;
}

// Every linear layer's three GEMMs, out (m, n) = a (m, k) b (k, n), in
// torch_gpt2.py's gemm_shapes order and names.
std::vector<Gemm> gemmsOf(const Options &o) {
  std::vector<Gemm> gemms;
  std::stringstream list(o.configs);
  std::string name;
  while (std::getline(list, name, ',')) {
    const Config *config = nullptr;
    for (const Config &c : kConfigs)
      if (name == c.name)
        config = &c;
    if (!config)
      refuse("--configs: '" + name +
             "' is not a config; expected some of "
             "tiny,124m,774m");
    const int64_t c = config->width, m = o.microBatch * config->seq;
    const struct {
      const char *name;
      int64_t out, in;
    } linears[] = {{"qkv", 3 * c, c},
                   {"attn.proj", c, c},
                   {"fc", 4 * c, c},
                   {"mlp.proj", c, 4 * c},
                   {"lm_head", kPaddedVocab, c}};
    for (const auto &l : linears) {
      gemms.push_back(
          {name, std::string(l.name) + ".fwd", m, l.out, l.in, Gemm::Fwd});
      gemms.push_back(
          {name, std::string(l.name) + ".dgrad", m, l.in, l.out, Gemm::Dgrad});
      gemms.push_back(
          {name, std::string(l.name) + ".wgrad", l.out, l.in, m, Gemm::Wgrad});
    }
  }
  return gemms;
}

// The buffers of the largest GEMM, carved out of one arena.
struct Buffers {
  uint16_t *a, *b;     // bf16 operands: a (m, k) and b (n, k) elements
  uint8_t *a8, *b8;    // their FP8 codes
  void *c;             // the product: f32 or bf16, m x n
  float *cRef, *cFp8;  // the error check's two f32 products
  float *amax, *scale; // [a, b] each
  float *rowScales;    // rowwise scales: a's rows, then b's columns
};

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  const std::vector<Gemm> gemms = gemmsOf(o);
  // The error check multiplies the first rows only.
  constexpr int64_t kCheckRows = 256;
  size_t maxA = 0, maxB = 0, maxC = 0, maxCheck = 0, maxRows = 0, maxCols = 0;
  for (const Gemm &g : gemms) {
    maxRows = std::max(maxRows, size_t(g.m));
    maxCols = std::max(maxCols, size_t(g.n));
    maxA = std::max(maxA, size_t(g.m * g.k));
    maxB = std::max(maxB, size_t(g.n * g.k));
    maxC = std::max(maxC, size_t(g.m * g.n));
    maxCheck = std::max(maxCheck, size_t(std::min(g.m, kCheckRows) * g.n));
  }
  const size_t bytes = aligned(2 * maxA) + aligned(2 * maxB) + aligned(maxA) +
                       aligned(maxB) + aligned(4 * maxC) +
                       2 * aligned(4 * maxCheck) + 2 * aligned(16) +
                       aligned(4 * (maxRows + maxCols));
  int failures = 0;
  try {
    Context ctx(gptrt::parseDevice(o.device), {{"bench", bytes, 256}});
    char *p = static_cast<char *>(ctx.arenaBase(0));
    auto take = [&](size_t size) {
      char *at = p;
      p += aligned(size);
      return at;
    };
    Buffers buf;
    buf.a = reinterpret_cast<uint16_t *>(take(2 * maxA));
    buf.b = reinterpret_cast<uint16_t *>(take(2 * maxB));
    buf.a8 = reinterpret_cast<uint8_t *>(take(maxA));
    buf.b8 = reinterpret_cast<uint8_t *>(take(maxB));
    buf.c = take(4 * maxC);
    buf.cRef = reinterpret_cast<float *>(take(4 * maxCheck));
    buf.cFp8 = reinterpret_cast<float *>(take(4 * maxCheck));
    buf.amax = reinterpret_cast<float *>(take(16));
    buf.scale = reinterpret_cast<float *>(take(16));
    buf.rowScales = reinterpret_cast<float *>(take(4 * (maxRows + maxCols)));
    {
      // 2^20 normal draws, repeated with a shifting offset: drawing all
      // ~9e8 elements of the largest operands (lm_head's) took 10-20 s of
      // one CPU thread, out of the device check's budget.
      std::mt19937 rng(1234);
      std::normal_distribution<float> normal;
      constexpr size_t kPool = size_t(1) << 20;
      std::vector<uint16_t> pool(kPool);
      for (uint16_t &code : pool)
        code = gptrt::cpu::floatToBf16(normal(rng));
      std::vector<uint16_t> host(std::max(maxA, maxB));
      for (uint16_t *dest : {buf.a, buf.b}) {
        const size_t n = dest == buf.a ? maxA : maxB;
        for (size_t i = 0; i < n; ++i)
          host[i] = pool[(i + (i / kPool) * 4099) % kPool];
        ctx.copyIn(dest, host.data(), 2 * n);
      }
      // Powers of two, as fp8-rowwise's scales are.
      std::vector<float> scales(maxRows + maxCols);
      for (size_t i = 0; i < scales.size(); ++i)
        scales[i] = std::ldexp(1.0f, int(i % 5) - 2);
      ctx.copyIn(buf.rowScales, scales.data(), 4 * scales.size());
    }
    gptrt::cuda::Device *gpu = ctx.cudaDevice();
    gptrt_context *h = ctx.handle();
    std::printf("GEMMs of one training step (M = micro-batch %lld x seq) "
                "through gptc's runtime on %s; microseconds per GEMM\n",
                (long long)o.microBatch, o.device.c_str());
    std::printf("%-6s %-16s %7s %7s %7s %10s %10s %10s %7s %7s %9s %10s %10s "
                "%3s\n",
                "config", "gemm", "m", "n", "k", "bf16 us", "fp8 us",
                "+cast us", "fp8 x", "+cast x", "rel err", "rw us", "rw-ov us",
                "ov");
    for (const Gemm &g : gemms) {
      const int64_t formatA =
          g.kind == Gemm::Fwd ? GPTRT_FP8_E4M3 : GPTRT_FP8_E5M2;
      const double fp8MaxA = formatA == GPTRT_FP8_E4M3 ? 448.0 : 57344.0;
      const int64_t fastAccum = g.kind == Gemm::Fwd ? 1 : 0;
      // Amax, scale and cast of both operands: the codes the FP8 GEMM
      // reads, and the +cast column's extra work.
      auto cast = [&] {
        gptrt_amax(h, buf.a, buf.amax, g.m * g.k, GPTRT_DTYPE_BF16);
        gptrt_scale_quantize_fp8(h, buf.a, buf.amax, buf.a8, buf.scale,
                                 g.m * g.k, formatA, -1, GPTRT_DTYPE_BF16,
                                 fp8MaxA, 0, 0, 1e-12);
        gptrt_amax(h, buf.b, buf.amax + 1, g.n * g.k, GPTRT_DTYPE_BF16);
        gptrt_scale_quantize_fp8(h, buf.b, buf.amax + 1, buf.b8, buf.scale + 1,
                                 g.n * g.k, GPTRT_FP8_E4M3, -1,
                                 GPTRT_DTYPE_BF16, 448.0, 0, 0, 1e-12);
      };
      cast();
      // gptc's layouts: bf16 fwd (0, 1), dgrad (0, 0), wgrad (1, 0) into
      // the f32 gradient; every FP8 GEMM (0, 1).
      const bool wgrad = g.kind == Gemm::Wgrad;
      const int64_t resultDtype =
          wgrad ? GPTRT_DTYPE_F32_ACCUMULATE : GPTRT_DTYPE_BF16;
      const gptrt_gemm_desc bf16Desc = gptrt::test::bf16Gemm(
          1, g.m, g.n, g.k, wgrad ? 1 : 0, g.kind == Gemm::Fwd ? 1 : 0, 0, 0, 0,
          resultDtype);
      const gptrt_gemm_desc fp8Desc =
          gptrt::test::fp8Gemm(1, g.m, g.n, g.k, 0, 1, 0, 0, 0, formatA,
                               GPTRT_FP8_E4M3, fastAccum, resultDtype);
      const gptrt_gemm_desc rowwiseDesc = gptrt::test::fp8RowwiseGemm(
          1, g.m, g.n, g.k, 0, 1, 0, 0, 0, formatA, GPTRT_FP8_E4M3, fastAccum,
          1, 1, resultDtype);
      auto bf16 = [&] {
        gptrt_gemm(h, buf.a, buf.b, nullptr, nullptr, nullptr, nullptr, nullptr,
                   buf.c, nullptr, nullptr, nullptr, nullptr, &bf16Desc,
                   nullptr);
      };
      auto fp8 = [&] {
        gptrt_gemm(h, buf.a8, buf.b8, buf.scale, buf.scale + 1, nullptr,
                   nullptr, nullptr, buf.c, nullptr, nullptr, nullptr, nullptr,
                   &fp8Desc, nullptr);
      };
      // fp8-rowwise's GEMM of the same form, both CUDA paths.
      auto rowwise = [&] {
        const float *rowScales = buf.rowScales,
                    *colScales = buf.rowScales + g.m;
        gptrt_gemm(h, buf.a8, buf.b8, rowScales, colScales, nullptr, nullptr,
                   nullptr, buf.c, nullptr, nullptr, nullptr, nullptr,
                   &rowwiseDesc, nullptr);
      };
      // The check: the first rows of a b^T in bf16 and in FP8, both f32.
      const int64_t rows = std::min(g.m, kCheckRows);
      const gptrt_gemm_desc bf16Check = gptrt::test::bf16Gemm(
          1, rows, g.n, g.k, 0, 1, 0, 0, 0, GPTRT_DTYPE_F32);
      gptrt_gemm(h, buf.a, buf.b, nullptr, nullptr, nullptr, nullptr, nullptr,
                 buf.cRef, nullptr, nullptr, nullptr, nullptr, &bf16Check,
                 nullptr);
      const gptrt_gemm_desc fp8Check =
          gptrt::test::fp8Gemm(1, rows, g.n, g.k, 0, 1, 0, 0, 0, formatA,
                               GPTRT_FP8_E4M3, fastAccum, GPTRT_DTYPE_F32);
      gptrt_gemm(h, buf.a8, buf.b8, buf.scale, buf.scale + 1, nullptr, nullptr,
                 nullptr, buf.cFp8, nullptr, nullptr, nullptr, nullptr,
                 &fp8Check, nullptr);
      std::vector<float> ref(size_t(rows * g.n)), got(ref.size());
      ctx.copyOut(ref.data(), buf.cRef, 4 * ref.size());
      ctx.copyOut(got.data(), buf.cFp8, 4 * got.size());
      if (ctx.failed())
        refuse(g.config + " " + g.name + ": " + ctx.error(), 1);
      double diff = 0, norm = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        diff += double(got[i] - ref[i]) * (got[i] - ref[i]);
        norm += double(ref[i]) * ref[i];
      }
      const double relErr = std::sqrt(diff / norm);
      // About 10 ms of GEMMs per measurement at 500 TFLOP/s.
      const double flops = 2.0 * g.m * g.n * g.k;
      const int iters =
          o.iters ? o.iters
                  : int(std::clamp(std::round(5e12 / flops), 5.0, 200.0));
      const double bf16Us = timeCalls(ctx, iters, o.repeats, bf16);
      const double fp8Us = timeCalls(ctx, iters, o.repeats, fp8);
      const double castUs = timeCalls(ctx, iters, o.repeats, [&] {
        cast();
        fp8();
      });
      const double rowwiseUs = timeCalls(ctx, iters, o.repeats, rowwise);
      double outerVecUs = rowwiseUs;
      bool outerVecTaken = false;
      if (gpu) {
        gpu->setRowwiseOuterVecScales(true);
        const int64_t before = gpu->outerVecGemms();
        outerVecUs = timeCalls(ctx, iters, o.repeats, rowwise);
        outerVecTaken = gpu->outerVecGemms() > before;
        gpu->setRowwiseOuterVecScales(false);
      }
      if (ctx.failed())
        refuse(g.config + " " + g.name + ": " + ctx.error(), 1);
      const bool bad = !std::isfinite(relErr) || relErr > 0.2;
      failures += bad;
      std::printf("%-6s %-16s %7lld %7lld %7lld %10.1f %10.1f %10.1f %7.2f "
                  "%7.2f %9.2e %10.1f %10.1f %3s%s\n",
                  g.config.c_str(), g.name.c_str(), (long long)g.m,
                  (long long)g.n, (long long)g.k, bf16Us, fp8Us, castUs,
                  bf16Us / fp8Us, bf16Us / castUs, relErr, rowwiseUs,
                  outerVecUs, outerVecTaken ? "yes" : "no",
                  bad ? "  <- FP8 product off: wrong operands or scales" : "");
      std::printf("RESULT {\"framework\": \"gptc\", \"kind\": \"gemm\", "
                  "\"device\": \"%s\", \"config\": \"%s\", \"name\": "
                  "\"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                  "\"bf16_us\": %.2f, \"fp8_us\": %.2f, "
                  "\"fp8_with_cast_us\": %.2f, \"rel_err\": %.3e, "
                  "\"fp8_rowwise_us\": %.2f, \"fp8_rowwise_outer_vec_us\": "
                  "%.2f, \"outer_vec_taken\": %s}\n",
                  o.device.c_str(), g.config.c_str(), g.name.c_str(),
                  (long long)g.m, (long long)g.n, (long long)g.k, bf16Us, fp8Us,
                  castUs, relErr, rowwiseUs, outerVecUs,
                  outerVecTaken ? "true" : "false");
      std::fflush(stdout);
    }
    // An FP8 gptrt_gemm launches a one-thread kernel in front of each
    // FP8 GEMM (cuBLASLt multiplies by the reciprocals of our scales): a
    // one-thread kernel back to back is what that costs, eagerly.
    const double launchUs =
        timeCalls(ctx, o.iters ? o.iters : 200, o.repeats, [&] {
          gptrt_scale_from_amax(h, buf.amax, buf.scale + 2, 448.0, 0, 0, 1e-12);
        });
    if (ctx.failed())
      refuse("one-thread kernel: " + ctx.error(), 1);
    std::printf("one-thread kernel (as the scale reciprocals in front of "
                "each FP8 GEMM): %.2f us per call\n",
                launchUs);
    std::printf("RESULT {\"framework\": \"gptc\", \"kind\": \"launch\", "
                "\"device\": \"%s\", \"one_thread_kernel_us\": %.2f}\n",
                o.device.c_str(), launchUs);
  } catch (const std::exception &e) {
    gptc::bench::refuseError(e.what());
  }
  if (failures)
    refuse(std::to_string(failures) +
               " FP8 products more than 20% off the bf16 ones (rel err "
               "column)",
           1);
  return 0;
}
