// The CUDA backend as the rest of the runtime sees it: plain C++ with no CUDA
// headers, so runtime/core compiles the same with or without a toolkit.
//
// A cuda::Device is one GPU, one stream, one cuBLASLt handle and workspace,
// owned by one Context. Its kernels take device pointers (arena addresses)
// and are launched asynchronously on that stream; errors in a launch are
// thrown as std::runtime_error naming the kernel. The kernels follow the
// semantics of the gptrt_* functions of runtime/abi/gptrt.h one to one (same
// argument names), so gptrt.h is their documentation.
//
// openDevice() is defined by runtime/cuda (Device.cu) when the toolkit was
// found at configure time, and by runtime/core/NoCuda.cpp otherwise.
#ifndef GPTRT_CUDA_BACKEND_H
#define GPTRT_CUDA_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gptrt::cuda {

// The output epilogue's FP8 work (gptrt.h's epilogue: amax, and cast
// without transpose) done by a producer kernel as it stores its output y:
// amax[0] = max |y| and, with q, q = fp8(y * scale[0]) in `format`, both
// of y as stored (rounded to its dtype). A null amax: the plain kernel.
struct Fp8Epilogue {
  float *amax = nullptr;
  const float *scale = nullptr;
  uint8_t *q = nullptr;
  int64_t format = 0;
};

// A tensorwise cast that makes its own scale (rt-fuse-cast-scale): with
// amax non-null the cast's kernel works scale_from_amax of amax[0] out
// itself (current scaling), with history non-null fp8_state_scale of the
// amax history (delayed scaling), and stores it to the cast's scale
// buffer `out` for the GEMMs; neither: the cast reads a scale made before
// it.
struct ScaleFromAmax {
  const float *amax = nullptr;
  const float *history = nullptr;
  int64_t historyLength = 0;
  bool mostRecent = false;
  float *out = nullptr; // the cast's scale buffer
  double fp8Max = 0;
  int64_t margin = 0;
  bool powerOfTwo = false;
  double eps = 0;
};

// Which elements of an AdamW call take its weight decay: those in the
// `count` ascending ranges [bounds[2j], bounds[2j + 1]) of its elements;
// the others take weight decay 0 (gptrt_adamw_multi). At most
// GPTRT_ADAMW_MAX_DECAY_RANGES ranges: the kernels take the table by value.
struct AdamwDecay {
  static constexpr int kMaxRanges = 64;
  int64_t count = 0;
  int64_t bounds[2 * kMaxRanges] = {};

  // Every element of n (one parameter with its own weight decay).
  static AdamwDecay all(int64_t n) {
    AdamwDecay d;
    d.count = 1;
    d.bounds[1] = n;
    return d;
  }
};

// The residual stream's gradient a layernorm backward adds its dx into.
// Null resid: no add, dx is stored as it is.
struct ResidualGradient {
  const void *resid = nullptr;
  int64_t residDtype = 0;
  int64_t sumDtype = 0;
};

// One FP8 cast's statistics as the device collected them (see
// Device::recordCastStats); Context copies them into its Fp8CastStats.
struct CastStats {
  float amax = 0, scale = 0;
  int64_t underflow = 0, saturated = 0, elements = 0;
};

class Device {
public:
  virtual ~Device() = default;

  // --- the device and its memory --------------------------------------
  // "NVIDIA H200 (compute capability 9.0)".
  virtual std::string description() const = 0;
  // major * 10 + minor, e.g. 90 for Hopper, 89 for Ada.
  virtual int computeCapability() const = 0;
  // Records an event on the stream after everything launched so far and
  // returns it (a cudaEvent_t): gradient bucket `bucket` is final once it
  // completes. One event per bucket, re-recorded every step (the exchange
  // is done with it by then: gptrt_grad_sync waited).
  virtual void *recordBucketEvent(int64_t bucket) = 0;
  // Attention through FlashAttention.cu's tensor-core kernels where they
  // apply (bf16, head dimension a multiple of 16 up to 128), the baseline
  // kernels elsewhere; off (baseline everywhere) by default until a GPU
  // has checked the flash kernels.
  virtual void setFlashAttention(bool on) = 0;
  // The rowwise FP8 GEMM (scaledMatmulRowwise) as one cuBLASLt call with
  // per-row and per-column scale vectors (OUTER_VEC_32F, Hopper, cuBLAS
  // 12.9+) where cuBLASLt offers it, instead of a unit-scale GEMM to an
  // f32 sum and a pass dividing it by the scales; off by default until a
  // GPU has checked it (gptrun --fp8-rowwise-gemm outer-vec).
  virtual void setRowwiseOuterVecScales(bool on) = 0;
  // How many rowwise GEMMs took the OUTER_VEC_32F path so far (tests check
  // that cuBLASLt did not refuse it where it should not).
  virtual int64_t outerVecGemms() const = 0;
  // cudaMalloc'ed and zeroed; throws naming `what` and the size on failure.
  virtual void *allocZeroed(size_t bytes, const std::string &what) = 0;
  // The function that frees what allocZeroed returned (for unique_ptr).
  using FreeFn = void (*)(void *);
  virtual FreeFn freeFunction() const = 0;
  virtual void zero(void *dst, size_t bytes) = 0;
  // Host <-> device copies ordered on the stream; they return once the data
  // has arrived (they synchronise the stream).
  virtual void toDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void toHost(void *dst, const void *src, size_t bytes) = 0;
  // Waits for the stream; throws the first asynchronous error.
  virtual void synchronize() = 0;

  // --- gradient communication (GradientComm.cu) ---------------------------
  // For the data-parallel exchange's thread (runtime/train/BucketMemory):
  // each runs on `stream`, a cudaStream_t that is not the compute stream
  // (the NCCL communicator's), so that a bucket's copies and FP8 coding
  // overlap the backward as its transfer does. They use no state of this
  // Device, so they may be called while another thread feeds the compute
  // stream.
  virtual void copyOnStream(void *stream, void *dst, const void *src,
                            size_t bytes) = 0;
  virtual void zeroOnStream(void *stream, void *dst, size_t bytes) = 0;
  virtual void synchronizeStream(void *stream) = 0;
  // Timing events (cudaEvent_t), for the exchange's report of how long
  // communication took on its stream and how much of it the compute
  // stream waited for. recordTimingEvent records on `stream`, or on the
  // compute stream for null; secondsBetween waits for both events and
  // returns to's time minus from's (negative when `to` came first).
  virtual void *newTimingEvent() = 0;
  virtual void deleteTimingEvent(void *event) = 0;
  virtual void recordTimingEvent(void *event, void *stream) = 0;
  virtual double secondsBetween(void *from, void *to) = 0;
  // amax[0] = max |x[i]| over n f32 values, NaN winning; built in place.
  virtual void gradientAmax(void *stream, const float *x, int64_t n,
                            float *amax) = 0;
  // codes[i] = E4M3(x[i] * gradientFp8Scale(amax[0])), saturating to +-448
  // (runtime/core/GradientFp8Scale.h).
  virtual void gradientEncodeE4M3(void *stream, const float *x, int64_t n,
                                  const float *amax, uint8_t *codes) = 0;
  // x[i] = the f32 sum, from 0 and rank 0 first, of decoded
  // codes[r * stride + i] / scale over r < ranks: every rank adds in the
  // same order, so all get the same bits.
  virtual void gradientDecodeSumE4M3(void *stream, const uint8_t *codes,
                                     int64_t ranks, int64_t stride, int64_t n,
                                     const float *amax, float *x) = 0;

  // --- kernels (gptrt.h semantics) ---------------------------------------
  virtual void convert(const void *src, void *dst, int64_t n, int64_t from,
                       int64_t to) = 0;
  virtual void fill(float *out, int64_t n, float value) = 0;
  // Operands with a dtype (GPTRT_DTYPE_F32 or _BF16) are f32 or bf16
  // storage; the kernels compute in f32 (see gptrt.h).
  virtual void accumulate(const void *src, int64_t srcDtype, float *dst,
                          int64_t n) = 0;
  virtual void add(const void *a, int64_t aDtype, const void *b,
                   int64_t bDtype, void *out, int64_t outDtype, int64_t outer,
                   int64_t inner, bool broadcastB) = 0;
  // add with its output's FP8 epilogue in the same pass.
  virtual void addFp8(const void *a, int64_t aDtype, const void *b,
                      int64_t bDtype, void *out, int64_t outDtype,
                      int64_t outer, int64_t inner, bool broadcastB,
                      const Fp8Epilogue &fp8) = 0;
  virtual void scale(const float *x, float *out, int64_t n, float s) = 0;
  virtual void geluForward(const void *x, int64_t xDtype, void *out,
                           int64_t outDtype, int64_t n) = 0;
  virtual void geluForwardFp8(const void *x, int64_t xDtype, void *out,
                              int64_t outDtype, int64_t n,
                              const Fp8Epilogue &fp8) = 0;
  virtual void geluBackward(const void *dout, int64_t doutDtype,
                            const void *x, int64_t xDtype, void *dx,
                            int64_t dxDtype, int64_t n) = 0;
  virtual void geluBackwardFp8(const void *dout, int64_t doutDtype,
                               const void *x, int64_t xDtype, void *dx,
                               int64_t dxDtype, int64_t n,
                               const Fp8Epilogue &fp8) = 0;
  virtual void layerNormForward(const void *x, int64_t xDtype,
                                const float *w, const float *b, void *out,
                                int64_t outDtype, float *mean, float *rstd,
                                int64_t rows, int64_t width, float eps) = 0;
  virtual void layerNormForwardFp8(const void *x, int64_t xDtype,
                                   const float *w, const float *b, void *out,
                                   int64_t outDtype, float *mean, float *rstd,
                                   int64_t rows, int64_t width, float eps,
                                   const Fp8Epilogue &fp8) = 0;
  // gptrt_add_layernorm_fwd: x = a + b and its layernorm, one pass; fp8:
  // the epilogue of the layernorm's output (amax, cast).
  virtual void addLayerNormForward(const void *a, int64_t aDtype, const void *b,
                                   int64_t bDtype, const float *w,
                                   const float *bias, void *x, int64_t xDtype,
                                   void *out, int64_t outDtype, float *mean,
                                   float *rstd, int64_t rows, int64_t width,
                                   float eps, const Fp8Epilogue &fp8) = 0;
  // A layernorm (with `a`: of x = a + b, stored at x, as
  // addLayerNormForward) whose output nothing reads but its two FP8 casts
  // (rt-fuse-producer-dual-cast): fp8's amax and row-major codes as the
  // cast epilogue makes them, the output itself never stored, and qT those
  // codes transposed to width x rows -- the transposed cast at the same
  // scale, bit for bit. statSlot / statSlotT >= 0: each cast's statistics
  // are recorded too (from the output, then kept in scratch).
  virtual void layerNormCastDual(const void *a, int64_t aDtype, const void *b,
                                 int64_t bDtype, void *x, int64_t xDtype,
                                 const float *w, const float *bias,
                                 int64_t outDtype, float *mean, float *rstd,
                                 int64_t rows, int64_t width, float eps,
                                 const Fp8Epilogue &fp8, uint8_t *qT,
                                 int64_t statSlot, int64_t statSlotT) = 0;
  // With a residual (gptrt_layernorm_bwd_add), dx rounded to dxDtype is
  // added to it and the sum stored at dx as residual.sumDtype. fp8: the
  // epilogue of the values stored at dx (amax, cast).
  virtual void layerNormBackward(const void *dout, int64_t doutDtype,
                                 const void *x, int64_t xDtype, const float *w,
                                 const float *mean, const float *rstd, void *dx,
                                 int64_t dxDtype, void *dw, int64_t dwDtype,
                                 void *db, int64_t dbDtype, int64_t rows,
                                 int64_t width, const Fp8Epilogue &fp8,
                                 const ResidualGradient &residual) = 0;
  virtual void embeddingForward(const void *table, const int32_t *ids,
                                void *out, int64_t rows, int64_t width,
                                int64_t dtype) = 0;
  // dtableDtype kAccumulateF32: the rows are added into an f32 dtable
  // as it is (a gradient), not into a zeroed one.
  virtual void embeddingBackward(const void *dout, int64_t doutDtype,
                                 const int32_t *ids, void *dtable,
                                 int64_t dtableDtype, int64_t rows,
                                 int64_t tableRows, int64_t width) = 0;
  virtual void crossEntropyForward(const void *logits, int64_t logitsDtype,
                                   const int32_t *targets, float *loss,
                                   float *lse, int64_t rows, int64_t vocab,
                                   int64_t paddedVocab,
                                   int64_t ignoreIndex) = 0;
  virtual void crossEntropyBackward(const float *dloss, const void *logits,
                                    const int32_t *targets, const float *lse,
                                    void *dlogits, int64_t dtype,
                                    int64_t rows, int64_t vocab,
                                    int64_t paddedVocab,
                                    int64_t ignoreIndex) = 0;
  // Both of the above in one pass over each row (gptrt_cross_entropy_fwd_bwd);
  // amax, when not null, gets gptrt_amax of the stored dlogits (the amax
  // epilogue).
  virtual void crossEntropyFused(const float *dloss, const void *logits,
                                 const int32_t *targets, float *loss,
                                 float *lse, void *dlogits, float *amax,
                                 int64_t dtype, int64_t rows, int64_t vocab,
                                 int64_t paddedVocab, int64_t ignoreIndex) = 0;
  virtual void globalNorm(const float *x, float *out, int64_t n) = 0;
  virtual void clipScale(const float *norm, float *out, float maxNorm) = 0;
  virtual void adamw(const float *grad, const float *gradScale, const float *lr,
                     const float *step, float *param, float *m, float *v,
                     int64_t n, double beta1, double beta2, double eps,
                     double weightDecay, const AdamwDecay &decay) = 0;
  virtual void arange(int32_t *out, int64_t n) = 0;
  // elementBytes: 4 (f32) or 2 (bf16 codes, moved as they are).
  virtual void copyBlocks(const void *src, void *dst, int64_t outer,
                          int64_t len, int64_t dstStride, int64_t srcStride,
                          int64_t dstOffset, int64_t srcOffset,
                          int elementBytes) = 0;
  // shape/perm: `rank` entries each (host memory).
  virtual void permute(const float *src, float *dst, const int64_t *shape,
                       const int64_t *perm, int rank) = 0;
  virtual void biasAdd(const float *bias, float *c, int64_t rows,
                       int64_t cols) = 0;
  virtual void reduceRows(const void *x, int64_t xDtype, void *out,
                          int64_t outDtype, int64_t rows, int64_t cols) = 0;
  // Baseline attention (Attention.cu); head dimension <= 256. The
  // activations are all f32 or all bf16 storage (dtype); lse is f32.
  virtual void attentionForward(const void *q, const void *k, const void *v,
                                void *out, float *lse, int64_t batch,
                                int64_t seq, int64_t width, int64_t heads,
                                bool causal, int64_t dtype) = 0;
  virtual void attentionBackward(const void *dout, const void *q,
                                 const void *k, const void *v,
                                 const void *out, const float *lse, void *dq,
                                 void *dk, void *dv, int64_t batch,
                                 int64_t seq, int64_t width, int64_t heads,
                                 bool causal, int64_t dtype) = 0;
  // The same with q, k, v (and dq, dk, dv) packed in one [batch, seq,
  // 3 width] buffer (gptrt_attention_fwd_packed / _bwd_packed).
  // fp8 (forward): the epilogue of out as stored (amax, cast without
  // transpose); amax (backward), when not null: gptrt_amax of dqkv.
  virtual void attentionForwardPacked(const void *qkv, void *out, float *lse,
                                      const Fp8Epilogue &fp8, int64_t batch,
                                      int64_t seq, int64_t width, int64_t heads,
                                      bool causal, int64_t dtype) = 0;
  virtual void attentionBackwardPacked(const void *dout, const void *qkv,
                                       const void *out, const float *lse,
                                       void *dqkv, float *amax, int64_t batch,
                                       int64_t seq, int64_t width,
                                       int64_t heads, bool causal,
                                       int64_t dtype) = 0;
  // The step scalars (gptrt.h's gptrt_step_scalar: loss scale, learning
  // rate, step) live in device memory: the host uploads them whenever the
  // runner changes one (never inside an entry call), and step_scalar copies
  // its slot device to device -- an operation a CUDA graph replays with the
  // value of the moment, unlike a host value captured into a kernel launch.
  virtual void uploadStepScalars(float lossScale, float learningRate,
                                 float step) = 0;
  virtual void copyStepScalar(float *out, int64_t which) = 0;

  // FP8 rowwise scaling (gptrt.h's amax_rows, row_scales, quantize_rows,
  // gptrt_gemm with rowwise FP8 scaling), as the CPU kernels define them. The
  // rowwise GEMM is the FP8 GEMM with unit scales followed by one pass dividing
  // element (r, j) by scaleA[r] * scaleB[j] (a scalar where not rowwise),
  // or with setRowwiseOuterVecScales one GEMM multiplying by their
  // reciprocals (exact for fp8-rowwise's power-of-two scales).
  // x (f32 or bf16, xDtype) of amaxRows and quantizeRows; c of
  // scaledMatmulRowwise f32 or bf16 (outDtype, the f32 quotient rounded);
  // with a bias (n f32, else null) the same pass then adds bias[j] to the
  // stored quotient and rounds again, as gptrt_add after the GEMM would.
  virtual void amaxRows(const void *x, int64_t xDtype, float *out,
                        int64_t rows, int64_t cols, bool alongCols) = 0;
  virtual void rowScales(const float *amax, float *out, int64_t n,
                         double fp8Max, int64_t margin, bool powerOfTwo,
                         double eps) = 0;
  virtual void quantizeRows(const void *x, int64_t xDtype,
                            const float *scales, uint8_t *q, int64_t rows,
                            int64_t cols, bool alongCols, int64_t format) = 0;
  // amaxRows, rowScales and quantizeRows along x's rows in one kernel.
  virtual void amaxQuantizeRows(const void *x, int64_t xDtype, float *amax,
                                float *scales, uint8_t *q, int64_t rows,
                                int64_t cols, int64_t format, double fp8Max,
                                int64_t margin, bool powerOfTwo,
                                double eps) = 0;
  // The same codes, transposed (q is cols x rows); with db (else null)
  // also x's column sums, gptrt_reduce_rows into dbDtype, from the same
  // read (the _bgrad forms).
  virtual void quantizeRowsTransposed(const void *x, int64_t xDtype,
                                      const float *scales, uint8_t *q,
                                      int64_t rows, int64_t cols,
                                      bool alongCols, int64_t format, void *db,
                                      int64_t dbDtype) = 0;
  // A GELU producer whose stored output nothing reads but its two FP8
  // casts (rt-fuse-producer-dual-cast): that output -- gelu(x), or with
  // dout gelu'(x) * dout, rounded to outDtype -- made as it is read, its
  // amax, its codes at *scale row-major (q) and transposed (qT), and with
  // db its column sums (gptrt_reduce_rows into dbDtype), in one pass over
  // the producer's inputs; the output itself is never written. statSlot /
  // statSlotT >= 0: each cast's statistics are recorded too.
  virtual void geluCastDual(const void *dout, int64_t doutDtype, const void *x,
                            int64_t xDtype, int64_t outDtype,
                            const float *scale, float *amax, uint8_t *q,
                            uint8_t *qT, void *db, int64_t dbDtype,
                            int64_t rows, int64_t cols, int64_t format,
                            int64_t statSlot, int64_t statSlotT) = 0;
  // rowScales of amax into scales, then quantizeRowsTransposed with them
  // (db as there), in one kernel whose blocks make their own rows' or
  // columns' scales.
  virtual void
  scaleQuantizeRowsTransposed(const void *x, int64_t xDtype, const float *amax,
                              uint8_t *q, float *scales, int64_t rows,
                              int64_t cols, bool alongCols, int64_t format,
                              double fp8Max, int64_t margin, bool powerOfTwo,
                              double eps, void *db, int64_t dbDtype) = 0;
  virtual void scaledMatmulRowwise(
      const uint8_t *a, const uint8_t *b, const float *scaleA,
      const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
      int64_t n, int64_t k, bool transA, bool transB, int64_t strideA,
      int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
      bool fastAccum, bool rowwiseA, bool rowwiseB, int64_t outDtype) = 0;

  // FP8 cast statistics (gptrun --fp8-stats-every), counted on the device
  // so that the casts stay asynchronous: beginCastStats zeroes `slots`
  // counters; recordCastStats adds the cast of n values of x (f32 or bf16,
  // gptrt.h's dtype) with *scale to `format` into `slot` -- amax of |x|,
  // values that became zero codes, values clamped beyond rounding (> 464
  // for E4M3, >= 61440 for E5M2), the element count, and the scale of the
  // last cast; endCastStats copies them out (one synchronisation, on
  // logging steps only). The same definitions as the CPU's (AbiSupport.h),
  // except that a NaN makes the device's amax NaN where the CPU's skips it.
  virtual void beginCastStats(size_t slots) = 0;
  virtual void recordCastStats(const void *x, int64_t dtype, int64_t n,
                               const float *scale, int64_t format,
                               int64_t slot) = 0;
  // The same for a rowwise cast of x (rows x cols), each value scaled by
  // scales[its row] (or [its column], alongCols); the scale recorded is the
  // smallest of the cast's, as the CPU logs it.
  virtual void recordRowwiseCastStats(const void *x, int64_t dtype,
                                      int64_t rows, int64_t cols,
                                      const float *scales, bool alongCols,
                                      int64_t format, int64_t slot) = 0;
  virtual void endCastStats(std::vector<CastStats> &out) = 0;

  // CUDA graphs of whole entry points (gptrun --cuda-graphs). captureGraph
  // records what `enqueue` puts on the stream into graph `slot` (replacing
  // it) without running it; launchGraph replays it. Growing the scratch
  // buffer drops every graph (they hold its old address): the runner then
  // captures again.
  virtual void captureGraph(int slot, const std::function<void()> &enqueue) = 0;
  virtual bool hasGraph(int slot) const = 0;
  virtual void launchGraph(int slot) = 0;

  // FP8 tensorwise scaling.
  virtual void amax(const void *x, int64_t xDtype, float *out, int64_t n) = 0;
  virtual void scaleFromAmax(const float *amax, float *out, double fp8Max,
                             int64_t margin, bool powerOfTwo, double eps) = 0;
  // With `own` active (rt-fuse-cast-scale) the kernel makes the scale it
  // casts with and stores it to own.out (`scale` is then own.out).
  virtual void quantizeFp8(const void *x, int64_t xDtype, const float *scale,
                           uint8_t *q, int64_t n, int64_t format,
                           const ScaleFromAmax &own) = 0;
  // q (cols x rows) = the cast of x (rows x cols), transposed.
  virtual void quantizeFp8Transposed(const void *x, int64_t xDtype,
                                     const float *scale, uint8_t *q,
                                     int64_t rows, int64_t cols, int64_t format,
                                     const ScaleFromAmax &own) = 0;
  // Both: q (rows x cols) and qT (cols x rows) from one read of x.
  // db, when not null: gptrt_reduce_rows of x into db (dbDtype) too, its
  // first level of chunk sums from the cast's tiles (_bgrad). q may be null
  // (only the transposed copy).
  virtual void quantizeFp8Dual(const void *x, int64_t xDtype,
                               const float *scale, uint8_t *q, uint8_t *qT,
                               int64_t rows, int64_t cols, int64_t format,
                               void *db, int64_t dbDtype,
                               const ScaleFromAmax &own) = 0;
  virtual void fp8StateScale(const float *history, float *out,
                             int64_t length, double fp8Max, int64_t margin,
                             bool powerOfTwo, double eps,
                             bool mostRecent) = 0;
  virtual void fp8StateUpdate(const float *amax, float *history,
                              int64_t length) = 0;
  // fp8StateUpdate of the states i < count (at most 64) whose bit is set
  // in mask: amax[i], history + i * stride.
  virtual void fp8StateUpdateBatch(const float *amax, float *history,
                                   int64_t count, int64_t length,
                                   int64_t stride, uint64_t mask) = 0;
  // fp8StateScale of the states i < count (at most 64) whose bit is set in
  // mask: history + i * stride, out + i.
  virtual void fp8StateScaleBatch(const float *history, float *out,
                                  int64_t count, int64_t length, int64_t stride,
                                  uint64_t mask, double fp8Max, int64_t margin,
                                  bool powerOfTwo, double eps,
                                  bool mostRecent) = 0;

  // The output epilogue of the producer kernels (gptrt_<kernel>+amax /
  // +cast), over `out` (rows x cols of f32 or bf16, dtype as gptrt.h's
  // out_dtype): amax[0] = max |value|, and with q non-null
  // q = fp8(value * scale[0]), transposed on request. Today a separate
  // pass after the base kernel: correct, not yet fused into the producer.
  virtual void castEpilogue(const void *out, int64_t dtype, int64_t rows,
                            int64_t cols, float *amax, const float *scale,
                            uint8_t *q, int64_t format, bool transpose) = 0;

  // GEMMs through cuBLASLt (Gemm.cu). matmul: f32 in, f32 out, f32
  // arithmetic. matmulBf16 (without a bias), matmulBf16Bgrad, scaledMatmul
  // and scaledMatmulRowwise also take outDtype kAccumulateF32: c is f32 and
  // the f32 result is added to it (cuBLASLt's beta = 1).
  virtual void matmul(const float *a, const float *b, float *c, int64_t batch,
                      int64_t m, int64_t n, int64_t k, bool transA,
                      bool transB, int64_t strideA, int64_t strideB,
                      int64_t strideC) = 0;
  // a, b bf16 codes (uint16), f32 accumulation; bias (may be null) f32,
  // added before c is stored as f32 or bf16 (outDtype, rounded once).
  // gptrt_gemm's gelu_pre / dgelu_pre epilogues: the GELU (or its derivative at
  // pre) in cuBLASLt's epilogue where it applies, else matmulBf16 and the
  // GELU kernel. Results contiguous (batch 1 or strideC = m * n).
  virtual void matmulBf16BiasGelu(const uint16_t *a, const uint16_t *b,
                                  const float *bias, void *pre,
                                  int64_t preDtype, void *out, int64_t outDtype,
                                  int64_t batch, int64_t m, int64_t n,
                                  int64_t k, bool transA, bool transB,
                                  int64_t strideA, int64_t strideB,
                                  int64_t strideC) = 0;
  virtual void matmulBf16Dgelu(const uint16_t *a, const uint16_t *b,
                               const void *pre, int64_t preDtype, void *dx,
                               int64_t dxDtype, int64_t dgDtype, int64_t batch,
                               int64_t m, int64_t n, int64_t k, bool transA,
                               bool transB, int64_t strideA, int64_t strideB,
                               int64_t strideC) = 0;
  // gptrt_gemm's dbias epilogue: cuBLASLt's BGRADB epilogue where it applies,
  // else matmulBf16 and reduceRows.
  virtual void matmulBf16Bgrad(const uint16_t *a, const uint16_t *b, void *c,
                               int64_t outDtype, void *db, int64_t dbDtype,
                               int64_t m, int64_t n, int64_t k, bool transB,
                               int64_t strideA, int64_t strideB,
                               int64_t strideC) = 0;
  virtual void matmulBf16(const uint16_t *a, const uint16_t *b,
                          const float *bias, void *c, int64_t outDtype,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          bool transA, bool transB, int64_t strideA,
                          int64_t strideB, int64_t strideC) = 0;
  // c is f32 or bf16 (outDtype; cuBLASLt writes D in that type).
  virtual void scaledMatmul(const uint8_t *a, const uint8_t *b,
                            const float *scaleA, const float *scaleB, void *c,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            bool transA, bool transB, int64_t strideA,
                            int64_t strideB, int64_t strideC, int64_t formatA,
                            int64_t formatB, bool fastAccum,
                            int64_t outDtype) = 0;
  // scaledMatmul plus bias (n f32) per column of c, contiguous batches:
  // cuBLASLt's BIAS epilogue where it offers one, else the GEMM and add.
  virtual void scaledMatmulBias(const uint8_t *a, const uint8_t *b,
                                const float *scaleA, const float *scaleB,
                                const float *bias, void *c, int64_t batch,
                                int64_t m, int64_t n, int64_t k, bool transA,
                                bool transB, int64_t strideA, int64_t strideB,
                                int64_t strideC, int64_t formatA,
                                int64_t formatB, bool fastAccum,
                                int64_t outDtype) = 0;
};

// gptrt.h's GPTRT_DTYPE_F32_ACCUMULATE (AbiSupport.h checks they agree): a
// GEMM's outDtype (or embeddingBackward's dtableDtype) for the
// *_accumulate kernels, c += the f32 result; and the dtype of the small
// gradient outputs that take it (reduceRows's out, layerNormBackward's dw
// and db, the bias gradients of matmulBf16Bgrad and quantizeFp8Dual).
inline constexpr int64_t kAccumulateF32 = 257;

// Opens device 0. Throws std::runtime_error with one line for the user:
// "no CUDA device found (cudaGetDeviceCount: <CUDA's reason>)" where there
// is none, or that the runtime was built without CUDA.
std::unique_ptr<Device> openDevice();

// True when this runtime was built with the CUDA backend.
bool built();

// How many CUDA devices this process can use: 0 without a driver, without
// a device, or in a runtime built without CUDA. Never throws.
int usableDeviceCount();

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_BACKEND_H
