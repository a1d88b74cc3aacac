// Elementwise kernels: convert (f32 <-> bf16), fill, accumulate, add (with
// broadcast), scale, GELU forward/backward, embedding gather/scatter.
// llm.c style: one thread per element (or per 4 elements with 16-byte
// vector accesses when every pointer allows it), grid-stride loops.
#include "runtime/abi/gptrt.h"
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Gelu.cuh"
#include "runtime/cuda/Storage.cuh"

#include <cuda_bf16.h>

namespace gptrt::cuda {

namespace {

bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// out[i] = f(i) over n elements; f gets the element index. The float4 path
// runs when n and every pointer the caller names allow 16-byte accesses.
template <typename F>
__global__ void mapKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(i);
}

template <typename F> void launchMap(cudaStream_t s, int64_t n, F f,
                                     const char *name) {
  if (n <= 0)
    return;
  mapKernel<<<gridFor(n), 256, 0, s>>>(n, f);
  checkLaunch(name);
}

// The same with an FP8 sink (Fp8Sink.cuh): f(i, m, s) stores its
// element(s) and puts each stored value into the sink, m being the
// thread's running amax and s the scale (a fused launch's grid is
// Fp8Sink::cappedGrid).
template <typename F>
__global__ void mapSinkKernel(int64_t n, F f, Fp8Sink sink) {
  const float s = sink.scaleValue();
  unsigned m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(i, m, s);
  sink.finish(m);
}

template <typename F>
void launchMapSink(cudaStream_t st, int64_t n, F f, const Fp8Sink &sink,
                   const char *name) {
  if (n <= 0)
    return;
  mapSinkKernel<<<sink.cappedGrid(gridFor(n)), 256, 0, st>>>(n, f, sink);
  checkLaunch(name);
}

} // namespace

void DeviceImpl::convert(const void *src, void *dst, int64_t n, int64_t from,
                         int64_t to) {
  if (from == GPTRT_DTYPE_F32 && to == GPTRT_DTYPE_BF16) {
    const float *in = static_cast<const float *>(src);
    __nv_bfloat16 *out = static_cast<__nv_bfloat16 *>(dst);
    // __float2bfloat16 rounds to nearest even and canonicalises NaN to
    // 0x7FFF, exactly what runtime/cpu/Bf16.h emulates.
    launchMap(stream_, n,
              [=] __device__(int64_t i) { out[i] = __float2bfloat16(in[i]); },
              "gptrt_convert f32->bf16");
  } else if (from == GPTRT_DTYPE_BF16 && to == GPTRT_DTYPE_F32) {
    const __nv_bfloat16 *in = static_cast<const __nv_bfloat16 *>(src);
    float *out = static_cast<float *>(dst);
    launchMap(stream_, n,
              [=] __device__(int64_t i) { out[i] = __bfloat162float(in[i]); },
              "gptrt_convert bf16->f32");
  } else {
    throw std::invalid_argument("converts dtype " + std::to_string(from) +
                                " to " + std::to_string(to) +
                                ", expected f32 (1) <-> bf16 (2)");
  }
}

void DeviceImpl::fill(float *out, int64_t n, float value) {
  launchMap(stream_, n, [=] __device__(int64_t i) { out[i] = value; },
            "gptrt_fill");
}

void DeviceImpl::accumulate(const void *srcData, int64_t srcDtype, float *dst,
                            int64_t n) {
  if (srcDtype == GPTRT_DTYPE_F32) {
    const float *src = static_cast<const float *>(srcData);
    if (n % 4 == 0 && aligned16(src) && aligned16(dst)) {
      const float4 *s4 = reinterpret_cast<const float4 *>(src);
      float4 *d4 = reinterpret_cast<float4 *>(dst);
      launchMap(stream_, n / 4,
                [=] __device__(int64_t i) {
                  float4 a = d4[i], b = s4[i];
                  d4[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z,
                                      a.w + b.w);
                },
                "gptrt_accumulate");
      return;
    }
  }
  if (srcDtype == GPTRT_DTYPE_BF16 && n % 8 == 0 && aligned16(srcData) &&
      aligned16(dst)) {
    const Bf16x8 *s8 = static_cast<const Bf16x8 *>(srcData);
    float4 *d4 = reinterpret_cast<float4 *>(dst);
    launchMap(stream_, n / 8,
              [=] __device__(int64_t i) {
                float s[8];
                s8[i].unpack(s);
                float4 lo = d4[2 * i], hi = d4[2 * i + 1];
                d4[2 * i] = make_float4(lo.x + s[0], lo.y + s[1], lo.z + s[2],
                                        lo.w + s[3]);
                d4[2 * i + 1] = make_float4(hi.x + s[4], hi.y + s[5],
                                            hi.z + s[6], hi.w + s[7]);
              },
              "gptrt_accumulate");
    return;
  }
  Storage src(srcData, srcDtype);
  launchMap(stream_, n, [=] __device__(int64_t i) { dst[i] += src.load(i); },
            "gptrt_accumulate");
}

void DeviceImpl::add(const void *aData, int64_t aDtype, const void *bData,
                     int64_t bDtype, void *outData, int64_t outDtype,
                     int64_t outer, int64_t inner, bool broadcastB) {
  addFp8(aData, aDtype, bData, bDtype, outData, outDtype, outer, inner,
         broadcastB, Fp8Epilogue{});
}

void DeviceImpl::addFp8(const void *aData, int64_t aDtype, const void *bData,
                        int64_t bDtype, void *outData, int64_t outDtype,
                        int64_t outer, int64_t inner, bool broadcastB,
                        const Fp8Epilogue &fp8) {
  const Fp8Sink sink = sinkFor(fp8);
  const int64_t n = outer * inner;
  const bool allF32 = aDtype == GPTRT_DTYPE_F32 &&
                      bDtype == GPTRT_DTYPE_F32 && outDtype == GPTRT_DTYPE_F32;
  if (allF32 && !broadcastB && n % 4 == 0 && aligned16(aData) &&
      aligned16(bData) && aligned16(outData)) {
    const float4 *a4 = static_cast<const float4 *>(aData);
    const float4 *b4 = static_cast<const float4 *>(bData);
    float4 *o4 = static_cast<float4 *>(outData);
    launchMapSink(
        stream_, n / 4,
        [=] __device__(int64_t i, unsigned &m, float s) {
          float4 x = a4[i], y = b4[i];
          float4 z = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
          o4[i] = z;
          sink.put(m, 4 * i, z.x, s);
          sink.put(m, 4 * i + 1, z.y, s);
          sink.put(m, 4 * i + 2, z.z, s);
          sink.put(m, 4 * i + 3, z.w, s);
        },
        sink, "gptrt_add");
    return;
  }
  const bool allBf16 = aDtype == GPTRT_DTYPE_BF16 &&
                       bDtype == GPTRT_DTYPE_BF16 &&
                       outDtype == GPTRT_DTYPE_BF16;
  if (allBf16 && inner % 8 == 0 && aligned16(aData) && aligned16(bData) &&
      aligned16(outData)) {
    // The residual adds and bias rows of bf16 activations, 8 at a time;
    // out may be a (each vector is read before it is written).
    const Bf16x8 *a8 = static_cast<const Bf16x8 *>(aData);
    const Bf16x8 *b8 = static_cast<const Bf16x8 *>(bData);
    Bf16x8 *o8 = static_cast<Bf16x8 *>(outData);
    const int64_t inner8 = inner / 8;
    launchMapSink(
        stream_, n / 8,
        [=] __device__(int64_t i, unsigned &m, float s) {
          float x[8], y[8];
          a8[i].unpack(x);
          b8[broadcastB ? i % inner8 : i].unpack(y);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            x[j] += y[j];
          const Bf16x8 stored = Bf16x8::pack(x);
          o8[i] = stored;
          if (sink.active()) {
            stored.unpack(x);
#pragma unroll
            for (int j = 0; j < 8; ++j)
              sink.put(m, 8 * i + j, x[j], s);
          }
        },
        sink, "gptrt_add");
    return;
  }
  // out may be a: each element is read before it is written, by one thread.
  Storage a(aData, aDtype), b(bData, bDtype), out(outData, outDtype);
  launchMapSink(
      stream_, n,
      [=] __device__(int64_t i, unsigned &m, float s) {
        const float v =
            out.rounded(a.load(i) + b.load(broadcastB ? i % inner : i));
        out.store(i, v);
        sink.put(m, i, v, s);
      },
      sink, "gptrt_add");
}

void DeviceImpl::scale(const float *x, float *out, int64_t n, float s) {
  launchMap(stream_, n, [=] __device__(int64_t i) { out[i] = x[i] * s; },
            "gptrt_scale");
}

void DeviceImpl::geluForward(const void *xData, int64_t xDtype,
                             void *outData, int64_t outDtype, int64_t n) {
  geluForwardFp8(xData, xDtype, outData, outDtype, n, Fp8Epilogue{});
}

void DeviceImpl::geluForwardFp8(const void *xData, int64_t xDtype,
                                void *outData, int64_t outDtype, int64_t n,
                                const Fp8Epilogue &fp8) {
  const Fp8Sink sink = sinkFor(fp8);
  if (xDtype == GPTRT_DTYPE_F32 && outDtype == GPTRT_DTYPE_F32 &&
      n % 4 == 0 && aligned16(xData) && aligned16(outData)) {
    const float4 *x4 = static_cast<const float4 *>(xData);
    float4 *o4 = static_cast<float4 *>(outData);
    launchMapSink(
        stream_, n / 4,
        [=] __device__(int64_t i, unsigned &m, float s) {
          float4 v = x4[i];
          float4 y = make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
          o4[i] = y;
          sink.put(m, 4 * i, y.x, s);
          sink.put(m, 4 * i + 1, y.y, s);
          sink.put(m, 4 * i + 2, y.z, s);
          sink.put(m, 4 * i + 3, y.w, s);
        },
        sink, "gptrt_gelu_fwd");
    return;
  }
  if (xDtype == GPTRT_DTYPE_BF16 && outDtype == GPTRT_DTYPE_BF16 &&
      n % 8 == 0 && aligned16(xData) && aligned16(outData)) {
    const Bf16x8 *x8 = static_cast<const Bf16x8 *>(xData);
    Bf16x8 *o8 = static_cast<Bf16x8 *>(outData);
    launchMapSink(
        stream_, n / 8,
        [=] __device__(int64_t i, unsigned &m, float s) {
          float v[8];
          x8[i].unpack(v);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            v[j] = gelu(v[j]);
          const Bf16x8 stored = Bf16x8::pack(v);
          o8[i] = stored;
          if (sink.active()) {
            stored.unpack(v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
              sink.put(m, 8 * i + j, v[j], s);
          }
        },
        sink, "gptrt_gelu_fwd");
    return;
  }
  Storage x(xData, xDtype), out(outData, outDtype);
  launchMapSink(
      stream_, n,
      [=] __device__(int64_t i, unsigned &m, float s) {
        const float y = out.rounded(gelu(x.load(i)));
        out.store(i, y);
        sink.put(m, i, y, s);
      },
      sink, "gptrt_gelu_fwd");
}

void DeviceImpl::geluBackward(const void *doutData, int64_t doutDtype,
                              const void *xData, int64_t xDtype, void *dxData,
                              int64_t dxDtype, int64_t n) {
  geluBackwardFp8(doutData, doutDtype, xData, xDtype, dxData, dxDtype, n,
                  Fp8Epilogue{});
}

void DeviceImpl::geluBackwardFp8(const void *doutData, int64_t doutDtype,
                                 const void *xData, int64_t xDtype,
                                 void *dxData, int64_t dxDtype, int64_t n,
                                 const Fp8Epilogue &fp8) {
  const Fp8Sink sink = sinkFor(fp8);
  if (doutDtype == GPTRT_DTYPE_BF16 && xDtype == GPTRT_DTYPE_BF16 &&
      dxDtype == GPTRT_DTYPE_BF16 && n % 8 == 0 && aligned16(doutData) &&
      aligned16(xData) && aligned16(dxData)) {
    const Bf16x8 *d8 = static_cast<const Bf16x8 *>(doutData);
    const Bf16x8 *x8 = static_cast<const Bf16x8 *>(xData);
    Bf16x8 *g8 = static_cast<Bf16x8 *>(dxData);
    launchMapSink(
        stream_, n / 8,
        [=] __device__(int64_t i, unsigned &m, float s) {
          float d[8], v[8];
          d8[i].unpack(d);
          x8[i].unpack(v);
#pragma unroll
          for (int j = 0; j < 8; ++j)
            v[j] = geluGrad(v[j]) * d[j];
          const Bf16x8 stored = Bf16x8::pack(v);
          g8[i] = stored;
          if (sink.active()) {
            stored.unpack(v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
              sink.put(m, 8 * i + j, v[j], s);
          }
        },
        sink, "gptrt_gelu_bwd");
    return;
  }
  Storage dout(doutData, doutDtype), x(xData, xDtype), dx(dxData, dxDtype);
  launchMapSink(
      stream_, n,
      [=] __device__(int64_t i, unsigned &m, float s) {
        const float g = dx.rounded(geluGrad(x.load(i)) * dout.load(i));
        dx.store(i, g);
        sink.put(m, i, g, s);
      },
      sink, "gptrt_gelu_bwd");
}

void DeviceImpl::embeddingForward(const void *tableData, const int32_t *ids,
                                  void *outData, int64_t rows, int64_t width,
                                  int64_t dtype) {
  Storage table(tableData, dtype), out(outData, dtype);
  launchMap(stream_, rows * width,
            [=] __device__(int64_t i) {
              int64_t r = i / width, j = i % width;
              out.store(i, table.load(int64_t(ids[r]) * width + j));
            },
            "gptrt_embedding_fwd");
}

void DeviceImpl::embeddingBackward(const void *doutData, int64_t doutDtype,
                                   const int32_t *ids, void *dtableData,
                                   int64_t dtableDtype, int64_t rows,
                                   int64_t tableRows, int64_t width) {
  // Sums in f32: the table itself (zeroed first, unless it is a gradient
  // the rows are added to), or scratch rounded into a bf16 table.
  const int64_t n = tableRows * width;
  const bool bf16 = dtableDtype == GPTRT_DTYPE_BF16;
  float *dtable = bf16 ? static_cast<float *>(scratch(size_t(n) * sizeof(float)))
                       : static_cast<float *>(dtableData);
  if (dtableDtype != kAccumulateF32)
    zero(dtable, size_t(n) * sizeof(float));
  // Atomics: repeated ids add up in an unspecified order (results differ
  // from the CPU's in-order sums by rounding only). Ids outside the table
  // are skipped rather than written out of bounds; the host checks token
  // ids against the vocabulary when it writes a batch (Io.cpp).
  Storage dout(doutData, doutDtype);
  launchMap(stream_, rows * width,
            [=] __device__(int64_t i) {
              int64_t r = i / width, j = i % width;
              int32_t id = ids[r];
              if (id >= 0 && id < tableRows)
                atomicAdd(&dtable[int64_t(id) * width + j], dout.load(i));
            },
            "gptrt_embedding_bwd");
  if (bf16)
    convert(dtable, dtableData, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16);
}

} // namespace gptrt::cuda
