// attention-bench: times gptc's attention kernels, forward and backward, on
// one shape -- the gptc side of device-check's comparison with PyTorch's
// scaled_dot_product_attention (tools/bench/torch_gpt2.py --attention-table).
//
//   attention-bench --kernel flash --batch 16 --seq 1024 --heads 12 --head-dim 64
//
// Causal, bf16 activations (f32 with --dtype f32), inputs N(0, 1) from a
// fixed seed. Each timing is the median over --repeats of --iters calls
// between two device synchronisations, divided by --iters. Prints one human
// line and `RESULT {json}`; exit 0, 1 on a kernel error or a non-finite
// output, 2 refused (no GPU for --device cuda, --kernel flash on the CPU).
#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cuda/Backend.h"
#include "tools/bench/BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

const char *const kBenchName = "attention-bench";

namespace {

using gptc::bench::positive;
using gptc::bench::refuse;
using gptrt::Context;
using gptrt::Device;

struct Options {
  std::string device = "cuda", kernel = "baseline", dtype = "bf16";
  int64_t batch = 16, seq = 1024, heads = 12, headDim = 64;
  int iters = 20, repeats = 5;
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      refuse(flag + " needs a value (see the header of attention_bench.cpp)");
    const char *value = argv[++i];
    if (flag == "--device")
      o.device = value;
    else if (flag == "--kernel")
      o.kernel = value;
    else if (flag == "--dtype")
      o.dtype = value;
    else if (flag == "--batch")
      o.batch = positive(flag, value);
    else if (flag == "--seq")
      o.seq = positive(flag, value);
    else if (flag == "--heads")
      o.heads = positive(flag, value);
    else if (flag == "--head-dim")
      o.headDim = positive(flag, value);
    else if (flag == "--iters")
      o.iters = int(positive(flag, value));
    else if (flag == "--repeats")
      o.repeats = int(positive(flag, value));
    else
      refuse("unknown flag " + flag + "; expected --device, --kernel, "
             "--dtype, --batch, --seq, --heads, --head-dim, --iters or "
             "--repeats");
  }
  if (o.device != "cuda" && o.device != "cpu")
    refuse("--device '" + o.device + "': expected cuda or cpu");
  if (o.kernel != "baseline" && o.kernel != "flash")
    refuse("--kernel '" + o.kernel + "': expected baseline or flash");
  if (o.dtype != "bf16" && o.dtype != "f32")
    refuse("--dtype '" + o.dtype + "': expected bf16 or f32");
  if (o.kernel == "flash" && o.device != "cuda")
    refuse("--kernel flash needs --device cuda: the CPU has one attention "
           "kernel");
  return o;
}

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  const int64_t width = o.heads * o.headDim;
  const int64_t n = o.batch * o.seq * width, rows = o.batch * o.heads * o.seq;
  const bool bf16 = o.dtype == "bf16";
  const int64_t dtype = bf16 ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32;
  const size_t elem = bf16 ? 2 : 4;
  using gptc::bench::aligned;
  // q, k, v, out, dout, dq, dk, dv, then the f32 log-sum-exp.
  const size_t tensor = aligned(size_t(n) * elem);
  const size_t bytes = 8 * tensor + aligned(size_t(rows) * sizeof(float));
  try {
    Context ctx(gptrt::parseDevice(o.device), {{"bench", bytes, 256}});
    if (gptrt::cuda::Device *gpu = ctx.cudaDevice())
      gpu->setFlashAttention(o.kernel == "flash");
    char *base = static_cast<char *>(ctx.arenaBase(0));
    void *t[8];
    for (int i = 0; i < 8; ++i)
      t[i] = base + size_t(i) * tensor;
    float *lse = reinterpret_cast<float *>(base + 8 * tensor);
    // Inputs q, k, v and the output gradient from a fixed seed.
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal;
    std::vector<unsigned char> host(size_t(n) * elem);
    for (int which : {0, 1, 2, 4}) {
      for (int64_t i = 0; i < n; ++i) {
        const float x = normal(rng);
        if (bf16) {
          const uint16_t code = gptrt::cpu::floatToBf16(x);
          std::memcpy(host.data() + 2 * i, &code, 2);
        } else {
          std::memcpy(host.data() + 4 * i, &x, 4);
        }
      }
      ctx.copyIn(t[which], host.data(), host.size());
    }
    gptrt_context *h = ctx.handle();
    const double fwd = gptc::bench::timeCalls(ctx, o.iters, o.repeats, [&] {
      gptrt_attention_fwd(h, t[0], t[1], t[2], t[3], lse, o.batch, o.seq,
                          width, o.heads, 1, dtype);
    });
    const double bwd = gptc::bench::timeCalls(ctx, o.iters, o.repeats, [&] {
      gptrt_attention_bwd(h, t[4], t[0], t[1], t[2], t[3], lse, t[5], t[6],
                          t[7], o.batch, o.seq, width, o.heads, 1, dtype);
    });
    if (ctx.failed())
      refuse(ctx.error(), 1);
    // Every dq element finite: a kernel that wrote nothing or garbage shows.
    ctx.copyOut(host.data(), t[5], host.size());
    for (int64_t i = 0; i < n; ++i) {
      float x;
      if (bf16) {
        uint16_t code;
        std::memcpy(&code, host.data() + 2 * i, 2);
        x = gptrt::cpu::bf16ToFloat(code);
      } else {
        std::memcpy(&x, host.data() + 4 * i, 4);
      }
      if (!std::isfinite(x))
        refuse("dq[" + std::to_string(i) + "] is " + std::to_string(x) +
                   ": the kernels computed garbage",
               1);
    }
    // Causal attention: QK^T and PV over half the T x T scores, 2 FLOPs a
    // multiply-add; the backward does 2.5 times the forward's GEMM work.
    const double fwdFlops = 2.0 * 2.0 * double(o.batch) * o.heads * o.seq *
                            o.seq * o.headDim / 2.0;
    std::printf("attention %s %s on %s: B %lld T %lld H %lld D %lld causal: "
                "forward %.1f us (%.1f TFLOP/s), backward %.1f us (%.1f "
                "TFLOP/s)\n",
                o.kernel.c_str(), o.dtype.c_str(), o.device.c_str(),
                (long long)o.batch, (long long)o.seq, (long long)o.heads,
                (long long)o.headDim, fwd, fwdFlops / fwd / 1e6, bwd,
                2.5 * fwdFlops / bwd / 1e6);
    std::printf("RESULT {\"framework\": \"gptc\", \"kind\": \"attention\", "
                "\"kernel\": \"%s\", \"dtype\": \"%s\", \"device\": \"%s\", "
                "\"batch\": %lld, \"seq\": %lld, \"heads\": %lld, "
                "\"head_dim\": %lld, \"fwd_us\": %.2f, \"bwd_us\": %.2f}\n",
                o.kernel.c_str(), o.dtype.c_str(), o.device.c_str(),
                (long long)o.batch, (long long)o.seq, (long long)o.heads,
                (long long)o.headDim, fwd, bwd);
  } catch (const std::exception &e) {
    gptc::bench::refuseError(e.what());
  }
  return 0;
}
