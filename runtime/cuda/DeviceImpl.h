// The CUDA backend's implementation class, shared by its .cu files: each
// file defines the methods of one job (Device.cu memory and streams,
// Elementwise.cu, Layout.cu, Attention.cu, LayerNorm.cu, Loss.cu, Fp8.cu,
// Optimizer.cu, Gemm.cu). Included by .cu files only.
#ifndef GPTRT_CUDA_DEVICEIMPL_H
#define GPTRT_CUDA_DEVICEIMPL_H

#include "runtime/cuda/Backend.h"
#include "runtime/cuda/CastSource.cuh"
#include "runtime/cuda/Fp8Sink.cuh"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <vector>
#include <stdexcept>
#include <string>
#include <tuple>

namespace gptrt::cuda {

// Throws std::runtime_error("<what>: <CUDA's name and text of the error>").
void check(cudaError_t status, const char *what);
void check(cublasStatus_t status, const char *what);
// After a launch: a bad configuration is reported here, a fault in the
// kernel only at the next synchronisation (Device::synchronize).
inline void checkLaunch(const char *kernel) {
  check(cudaGetLastError(), kernel);
}

// Blocks of 256 threads over n items, at most 65535 * 16 blocks: kernels
// use grid-stride loops, so any n is covered.
inline unsigned gridFor(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks > 65535 * 16 ? 65535 * 16 : blocks);
}

// One cached cuBLASLt plan: descriptors and the heuristic's algorithm for a
// shape, so a training step asks the heuristic once per GEMM shape.
// The GELU epilogues of GemmKey::epilogue: none (a bias alone is
// GemmKey::alignBias), GELU_AUX_BIAS (D = gelu(x + bias), aux = x + bias)
// and DGELU (D = gelu'(aux) * x).
// BGRADB writes the bias gradient (the sums over k of our a's columns)
// through the bias pointer instead of reading a bias.
enum GemmEpilogue { kNoGelu = 0, kGeluAuxBias = 1, kDgelu = 2, kBgradB = 3 };

struct GemmKey {
  // 0 f32, 1 bf16, 2 fp8, 3 bf16 with a bf16 result, 4 fp8 with a bf16
  // result
  int kind;
  int64_t batch, m, n, k, strideA, strideB, strideC;
  bool transA, transB;
  // FP8 formats in the low byte; the operand's pointer alignment << 8.
  int64_t formatA, formatB;
  int64_t alignC;  // c's pointer alignment in bytes
  // An f32 bias vector added in the epilogue: its pointer's alignment in
  // bytes, 0 without a bias.
  int64_t alignBias = 0;
  // FP8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM (gptrt_gemm_desc's
  // fast_accum).
  bool fastAccum = false;
  // A GELU epilogue (GemmEpilogue) and its aux matrix pointer's alignment.
  int epilogue = 0;
  int64_t alignAux = 0;
  // D = product + C with C = D (beta 1): an f32 D that accumulates.
  bool accumulate = false;
  // FP8 only: the scales are vectors, one per row of our a and one per
  // column of our b (cuBLASLt's OUTER_VEC_32F scale mode).
  bool outerVecScales = false;
  bool operator<(const GemmKey &o) const {
    return std::tie(kind, batch, m, n, k, strideA, strideB, strideC, transA,
                    transB, formatA, formatB, alignC, alignBias, fastAccum,
                    epilogue, alignAux, accumulate, outerVecScales) <
           std::tie(o.kind, o.batch, o.m, o.n, o.k, o.strideA, o.strideB,
                    o.strideC, o.transA, o.transB, o.formatA, o.formatB,
                    o.alignC, o.alignBias, o.fastAccum, o.epilogue, o.alignAux,
                    o.accumulate, o.outerVecScales);
  }
};

// An FP8 GEMM's operands in the TN form cuBLASLt's FP8 kernels take (see
// Gemm.cu's file comment): a as [m, k] and b as [n, k] per batch. One
// stored otherwise is first transposed into fp8Operands_ (a at 0, b at
// offB, both at cudaMalloc's 256-byte alignment), which needs `bytes`.
struct Fp8TnOperands {
  bool moveA = false, moveB = false;
  int64_t strideA = 0, strideB = 0; // the TN operands' batch strides
  int64_t bBatches = 1;             // b's batches (1 when shared)
  size_t offB = 0, bytes = 0;
};

struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // cuBLASLt offered no algorithm (kept so the heuristic is asked once);
  // only plans that may fall back (a bias epilogue) are kept refused.
  bool refused = false;
  ~GemmPlan();
};

class DeviceImpl final : public Device {
public:
  explicit DeviceImpl(int ordinal);
  ~DeviceImpl() override;

  std::string description() const override;
  int computeCapability() const override { return cc_; }
  void setFlashAttention(bool on) override { flashAttention_ = on; }
  void setRowwiseOuterVecScales(bool on) override { outerVecScales_ = on; }
  int64_t outerVecGemms() const override { return outerVecGemms_; }
  void *recordBucketEvent(int64_t bucket) override;
  void *allocZeroed(size_t bytes, const std::string &what) override;
  FreeFn freeFunction() const override;
  void zero(void *dst, size_t bytes) override;
  void toDevice(void *dst, const void *src, size_t bytes) override;
  void toHost(void *dst, const void *src, size_t bytes) override;
  void synchronize() override;
  void copyOnStream(void *stream, void *dst, const void *src,
                    size_t bytes) override;
  void zeroOnStream(void *stream, void *dst, size_t bytes) override;
  void synchronizeStream(void *stream) override;
  void *newTimingEvent() override;
  void deleteTimingEvent(void *event) override;
  void recordTimingEvent(void *event, void *stream) override;
  double secondsBetween(void *from, void *to) override;
  void gradientAmax(void *stream, const float *x, int64_t n,
                    float *amax) override;
  void gradientEncodeE4M3(void *stream, const float *x, int64_t n,
                          const float *amax, uint8_t *codes) override;
  void gradientDecodeSumE4M3(void *stream, const uint8_t *codes, int64_t ranks,
                             int64_t stride, int64_t n, const float *amax,
                             float *x) override;

  void convert(const void *src, void *dst, int64_t n, int64_t from,
               int64_t to) override;
  void fill(float *out, int64_t n, float value) override;
  void accumulate(const void *src, int64_t srcDtype, float *dst,
                  int64_t n) override;
  void add(const void *a, int64_t aDtype, const void *b, int64_t bDtype,
           void *out, int64_t outDtype, int64_t outer, int64_t inner,
           bool broadcastB) override;
  void addFp8(const void *a, int64_t aDtype, const void *b, int64_t bDtype,
              void *out, int64_t outDtype, int64_t outer, int64_t inner,
              bool broadcastB, const Fp8Epilogue &fp8) override;
  void scale(const float *x, float *out, int64_t n, float s) override;
  void geluForward(const void *x, int64_t xDtype, void *out,
                   int64_t outDtype, int64_t n) override;
  void geluForwardFp8(const void *x, int64_t xDtype, void *out,
                      int64_t outDtype, int64_t n,
                      const Fp8Epilogue &fp8) override;
  void geluBackward(const void *dout, int64_t doutDtype, const void *x,
                    int64_t xDtype, void *dx, int64_t dxDtype,
                    int64_t n) override;
  void geluBackwardFp8(const void *dout, int64_t doutDtype, const void *x,
                       int64_t xDtype, void *dx, int64_t dxDtype, int64_t n,
                       const Fp8Epilogue &fp8) override;
  void layerNormForward(const void *x, int64_t xDtype, const float *w,
                        const float *b, void *out, int64_t outDtype,
                        float *mean, float *rstd, int64_t rows, int64_t width,
                        float eps) override;
  void layerNormForwardFp8(const void *x, int64_t xDtype, const float *w,
                           const float *b, void *out, int64_t outDtype,
                           float *mean, float *rstd, int64_t rows,
                           int64_t width, float eps,
                           const Fp8Epilogue &fp8) override;
  void addLayerNormForward(const void *a, int64_t aDtype, const void *b,
                           int64_t bDtype, const float *w, const float *bias,
                           void *x, int64_t xDtype, void *out, int64_t outDtype,
                           float *mean, float *rstd, int64_t rows,
                           int64_t width, float eps,
                           const Fp8Epilogue &fp8) override;
  void layerNormBackward(const void *dout, int64_t doutDtype, const void *x,
                         int64_t xDtype, const float *w, const float *mean,
                         const float *rstd, void *dx, int64_t dxDtype, void *dw,
                         int64_t dwDtype, void *db, int64_t dbDtype,
                         int64_t rows, int64_t width, const Fp8Epilogue &fp8,
                         const ResidualGradient &residual) override;
  void embeddingForward(const void *table, const int32_t *ids, void *out,
                        int64_t rows, int64_t width, int64_t dtype) override;
  void embeddingBackward(const void *dout, int64_t doutDtype,
                         const int32_t *ids, void *dtable, int64_t dtableDtype,
                         int64_t rows, int64_t tableRows,
                         int64_t width) override;
  void crossEntropyForward(const void *logits, int64_t logitsDtype,
                           const int32_t *targets, float *loss, float *lse,
                           int64_t rows, int64_t vocab, int64_t paddedVocab,
                           int64_t ignoreIndex) override;
  void crossEntropyBackward(const float *dloss, const void *logits,
                            const int32_t *targets, const float *lse,
                            void *dlogits, int64_t dtype, int64_t rows,
                            int64_t vocab, int64_t paddedVocab,
                            int64_t ignoreIndex) override;
  void crossEntropyFused(const float *dloss, const void *logits,
                         const int32_t *targets, float *loss, float *lse,
                         void *dlogits, float *amax, int64_t dtype,
                         int64_t rows, int64_t vocab, int64_t paddedVocab,
                         int64_t ignoreIndex) override;
  void globalNorm(const float *x, float *out, int64_t n) override;
  void clipScale(const float *norm, float *out, float maxNorm) override;
  void adamw(const float *grad, const float *gradScale, const float *lr,
             const float *step, float *param, float *m, float *v, int64_t n,
             double beta1, double beta2, double eps, double weightDecay,
             const AdamwDecay &decay) override;
  void uploadStepScalars(float lossScale, float learningRate,
                         float step) override;
  void copyStepScalar(float *out, int64_t which) override;
  void amaxRows(const void *x, int64_t xDtype, float *out, int64_t rows,
                int64_t cols, bool alongCols) override;
  void rowScales(const float *amax, float *out, int64_t n, double fp8Max,
                 int64_t margin, bool powerOfTwo, double eps) override;
  void quantizeRows(const void *x, int64_t xDtype, const float *scales,
                    uint8_t *q, int64_t rows, int64_t cols, bool alongCols,
                    int64_t format) override;
  void amaxQuantizeRows(const void *x, int64_t xDtype, float *amax,
                        float *scales, uint8_t *q, int64_t rows, int64_t cols,
                        int64_t format, double fp8Max, int64_t margin,
                        bool powerOfTwo, double eps) override;
  void quantizeRowsTransposed(const void *x, int64_t xDtype,
                              const float *scales, uint8_t *q, int64_t rows,
                              int64_t cols, bool alongCols, int64_t format,
                              void *db, int64_t dbDtype) override;
  void layerNormCastDual(const void *a, int64_t aDtype, const void *b,
                         int64_t bDtype, void *x, int64_t xDtype,
                         const float *w, const float *bias, int64_t outDtype,
                         float *mean, float *rstd, int64_t rows, int64_t width,
                         float eps, const Fp8Epilogue &fp8, uint8_t *qT,
                         int64_t statSlot, int64_t statSlotT) override;
  void geluCastDual(const void *dout, int64_t doutDtype, const void *x,
                    int64_t xDtype, int64_t outDtype, const float *scale,
                    float *amax, uint8_t *q, uint8_t *qT, void *db,
                    int64_t dbDtype, int64_t rows, int64_t cols, int64_t format,
                    int64_t statSlot, int64_t statSlotT) override;
  void scaleQuantizeRowsTransposed(const void *x, int64_t xDtype,
                                   const float *amax, uint8_t *q, float *scales,
                                   int64_t rows, int64_t cols, bool alongCols,
                                   int64_t format, double fp8Max,
                                   int64_t margin, bool powerOfTwo, double eps,
                                   void *db, int64_t dbDtype) override;
  void scaledMatmulRowwise(const uint8_t *a, const uint8_t *b,
                           const float *scaleA, const float *scaleB,
                           const float *bias, void *c, int64_t batch, int64_t m,
                           int64_t n, int64_t k, bool transA, bool transB,
                           int64_t strideA, int64_t strideB, int64_t strideC,
                           int64_t formatA, int64_t formatB, bool fastAccum,
                           bool rowwiseA, bool rowwiseB,
                           int64_t outDtype) override;
  void beginCastStats(size_t slots) override;
  void recordCastStats(const void *x, int64_t dtype, int64_t n,
                       const float *scale, int64_t format,
                       int64_t slot) override;
  void recordRowwiseCastStats(const void *x, int64_t dtype, int64_t rows,
                              int64_t cols, const float *scales, bool alongCols,
                              int64_t format, int64_t slot) override;
  void endCastStats(std::vector<CastStats> &out) override;
  void captureGraph(int slot, const std::function<void()> &enqueue) override;
  bool hasGraph(int slot) const override;
  void launchGraph(int slot) override;
  void attentionForward(const void *q, const void *k, const void *v,
                        void *out, float *lse, int64_t batch, int64_t seq,
                        int64_t width, int64_t heads, bool causal,
                        int64_t dtype) override;
  void attentionBackward(const void *dout, const void *q, const void *k,
                         const void *v, const void *out, const float *lse,
                         void *dq, void *dk, void *dv, int64_t batch,
                         int64_t seq, int64_t width, int64_t heads,
                         bool causal, int64_t dtype) override;
  void attentionForwardPacked(const void *qkv, void *out, float *lse,
                              const Fp8Epilogue &fp8, int64_t batch,
                              int64_t seq, int64_t width, int64_t heads,
                              bool causal, int64_t dtype) override;
  void attentionBackwardPacked(const void *dout, const void *qkv,
                               const void *out, const float *lse, void *dqkv,
                               float *amax, int64_t batch, int64_t seq,
                               int64_t width, int64_t heads, bool causal,
                               int64_t dtype) override;
  void arange(int32_t *out, int64_t n) override;
  void copyBlocks(const void *src, void *dst, int64_t outer, int64_t len,
                  int64_t dstStride, int64_t srcStride, int64_t dstOffset,
                  int64_t srcOffset, int elementBytes) override;
  void permute(const float *src, float *dst, const int64_t *shape,
               const int64_t *perm, int rank) override;
  void biasAdd(const float *bias, float *c, int64_t rows,
               int64_t cols) override;
  void reduceRows(const void *x, int64_t xDtype, void *out,
                  int64_t outDtype, int64_t rows, int64_t cols) override;

  void amax(const void *x, int64_t xDtype, float *out, int64_t n) override;
  void scaleFromAmax(const float *amax, float *out, double fp8Max,
                     int64_t margin, bool powerOfTwo, double eps) override;
  void quantizeFp8(const void *x, int64_t xDtype, const float *scale,
                   uint8_t *q, int64_t n, int64_t format,
                   const ScaleFromAmax &own) override;
  void quantizeFp8Transposed(const void *x, int64_t xDtype, const float *scale,
                             uint8_t *q, int64_t rows, int64_t cols,
                             int64_t format, const ScaleFromAmax &own) override;
  void quantizeFp8Dual(const void *x, int64_t xDtype, const float *scale,
                       uint8_t *q, uint8_t *qT, int64_t rows, int64_t cols,
                       int64_t format, void *db, int64_t dbDtype,
                       const ScaleFromAmax &own) override;
  void fp8StateScale(const float *history, float *out, int64_t length,
                     double fp8Max, int64_t margin, bool powerOfTwo,
                     double eps, bool mostRecent) override;
  void fp8StateUpdate(const float *amax, float *history,
                      int64_t length) override;
  void fp8StateUpdateBatch(const float *amax, float *history, int64_t count,
                           int64_t length, int64_t stride,
                           uint64_t mask) override;
  void fp8StateScaleBatch(const float *history, float *out, int64_t count,
                          int64_t length, int64_t stride, uint64_t mask,
                          double fp8Max, int64_t margin, bool powerOfTwo,
                          double eps, bool mostRecent) override;

  void castEpilogue(const void *out, int64_t dtype, int64_t rows,
                    int64_t cols, float *amax, const float *scale, uint8_t *q,
                    int64_t format, bool transpose) override;

  void matmul(const float *a, const float *b, float *c, int64_t batch,
              int64_t m, int64_t n, int64_t k, bool transA, bool transB,
              int64_t strideA, int64_t strideB, int64_t strideC) override;
  void matmulBf16BiasGelu(const uint16_t *a, const uint16_t *b,
                          const float *bias, void *pre, int64_t preDtype,
                          void *out, int64_t outDtype, int64_t batch, int64_t m,
                          int64_t n, int64_t k, bool transA, bool transB,
                          int64_t strideA, int64_t strideB,
                          int64_t strideC) override;
  void matmulBf16Dgelu(const uint16_t *a, const uint16_t *b, const void *pre,
                       int64_t preDtype, void *dx, int64_t dxDtype,
                       int64_t dgDtype, int64_t batch, int64_t m, int64_t n,
                       int64_t k, bool transA, bool transB, int64_t strideA,
                       int64_t strideB, int64_t strideC) override;
  void matmulBf16Bgrad(const uint16_t *a, const uint16_t *b, void *c,
                       int64_t outDtype, void *db, int64_t dbDtype, int64_t m,
                       int64_t n, int64_t k, bool transB, int64_t strideA,
                       int64_t strideB, int64_t strideC) override;
  void matmulBf16(const uint16_t *a, const uint16_t *b, const float *bias,
                  void *c, int64_t outDtype, int64_t batch, int64_t m,
                  int64_t n, int64_t k, bool transA, bool transB,
                  int64_t strideA, int64_t strideB, int64_t strideC) override;
  void scaledMatmul(const uint8_t *a, const uint8_t *b, const float *scaleA,
                    const float *scaleB, void *c, int64_t batch, int64_t m,
                    int64_t n, int64_t k, bool transA, bool transB,
                    int64_t strideA, int64_t strideB, int64_t strideC,
                    int64_t formatA, int64_t formatB, bool fastAccum,
                    int64_t outDtype) override;
  void scaledMatmulBias(const uint8_t *a, const uint8_t *b, const float *scaleA,
                        const float *scaleB, const float *bias, void *c,
                        int64_t batch, int64_t m, int64_t n, int64_t k,
                        bool transA, bool transB, int64_t strideA,
                        int64_t strideB, int64_t strideC, int64_t formatA,
                        int64_t formatB, bool fastAccum,
                        int64_t outDtype) override;

  cudaStream_t stream() const { return stream_; }
  // A device buffer of at least `bytes`, reused by every kernel that needs
  // a temporary (block partial sums, transposed FP8 operands). Grown with a
  // synchronisation, so steady-state steps allocate nothing.
  void *scratch(size_t bytes);

private:
  // Gemm.cu: matmul (kind 0, f32) and matmulBf16 (kind 1) differ only in
  // the input type.
  // With a bias, returns false (having run nothing) when cuBLASLt has no
  // bias-epilogue algorithm for the shape; the caller adds the bias itself.
  // With a GELU epilogue (`aux` its matrix) it likewise returns false when
  // cuBLASLt has none for the shape. `accumulate` (an f32 c, kinds 0 and
  // 1) adds the product to c.
  template <typename T>
  bool plainGemm(int kind, const T *a, const T *b, void *c, int64_t batch,
                 int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                 int64_t strideA, int64_t strideB, int64_t strideC,
                 const float *bias = nullptr, const void *aux = nullptr,
                 int epilogue = kNoGelu, void *biasGrad = nullptr,
                 bool accumulate = false);
  // Gemm.cu: the FP8 GEMM of scaledMatmul, with bias (n f32) in cuBLASLt's
  // BIAS epilogue when non-null. Returns false (having run nothing) when
  // cuBLASLt has no bias-epilogue algorithm for the shape.
  bool scaledGemm(const uint8_t *a, const uint8_t *b, const float *scaleA,
                  const float *scaleB, void *c, int64_t batch, int64_t m,
                  int64_t n, int64_t k, bool transA, bool transB,
                  int64_t strideA, int64_t strideB, int64_t strideC,
                  int64_t formatA, int64_t formatB, bool fastAccum,
                  int64_t outDtype, const float *bias);
  // Gemm.cu: scaledMatmulRowwise's product without a bias, c = the FP8
  // product with element (r, j) divided by scaleA(r) * scaleB(j), in one
  // cuBLASLt call with OUTER_VEC_32F scales (their reciprocals, made by a
  // small kernel first). Returns false, having run nothing, when that is
  // off (setRowwiseOuterVecScales), the batches do not fold into one
  // GEMM (the scale vectors have no batch stride), k or the result is
  // empty, or cuBLASLt has no algorithm for it (before Hopper's cuBLAS
  // 12.9, or another architecture).
  bool rowwiseOuterVecGemm(const uint8_t *a, const uint8_t *b,
                           const float *scaleA, bool rowwiseA,
                           const float *scaleB, bool rowwiseB, void *c,
                           int64_t batch, int64_t m, int64_t n, int64_t k,
                           bool transA, bool transB, int64_t strideA,
                           int64_t strideB, int64_t strideC, int64_t formatA,
                           int64_t formatB, bool fastAccum, int64_t outDtype);
  // Gemm.cu: the FP8 GEMM key of TN operands `tn` (batch and m folded as
  // foldSharedB does), and the move that makes those operands; aT / bT
  // are a and b themselves where no move is needed.
  GemmKey fp8KeyOf(const Fp8TnOperands &tn, const uint8_t *a, const uint8_t *b,
                   const void *c, int64_t batch, int64_t m, int64_t n,
                   int64_t k, int64_t strideC, int64_t formatA, int64_t formatB,
                   bool fastAccum, int64_t outDtype, const void *bias) const;
  void moveToTn(const Fp8TnOperands &tn, const uint8_t *a, const uint8_t *b,
                int64_t batch, int64_t m, int64_t n, int64_t k, int64_t strideA,
                int64_t strideB, const uint8_t *&aT, const uint8_t *&bT);
  // Gemm.cu: the result of a GEMM with k = 0 (an empty sum): zeros in
  // batch matrices of `count` elements of `elementBytes`, `stride` apart,
  // leaving the gaps between them alone.
  void zeroBatches(void *c, size_t elementBytes, int64_t batch, int64_t count,
                   int64_t stride);
  // Gemm.cu: dst[b] = src[b] transposed, for `batch` matrices of rows x
  // cols bytes (src's srcStride bytes apart; dst packed) -- FP8 codes.
  void transposeBytes(const uint8_t *src, uint8_t *dst, int64_t rows,
                      int64_t cols, int64_t batch, int64_t srcStride);
  // Fp8.cu: the device form of an Fp8Epilogue for a producer kernel, its
  // amax zeroed on the stream first (inactive without an amax).
  Fp8Sink sinkFor(const Fp8Epilogue &fp8);
  // Fp8.cu: gptrt_amax's work on any stream (the exchange's too).
  void launchAmax(const void *x, int64_t xDtype, float *out, int64_t n,
                  cudaStream_t stream, const char *what);
  // Fp8.cu: the tiled transposed cast of castEpilogue,
  // quantizeFp8Transposed/Dual, quantizeRowsTransposed and geluCastDual,
  // of a stored tensor or a GELU output worked out as it is read
  // (CastSource); amax (its bits,
  // atomically maxed) may be null, with qRowMajor the codes are also
  // written untransposed, and scaleAxis picks scale[0] (0), scale[row]
  // (1) or scale[column] (2).
  // colSums, when not null, gets the sum of each 32-row tile's column in
  // row order: [tile rows, cols], gptrt_reduce_rows's first level.
  // own: the kernel makes the scale from an amax or a history (scaleAxis
  // 0), or each row's / column's scale from own.amax's per row / column
  // (1, 2; scale is then null), and stores it to own.out.
  void launchTransposedCast(const CastSource &x, const float *scale, uint8_t *q,
                            int64_t rows, int64_t cols, bool e4m3,
                            unsigned *amax, uint8_t *qRowMajor = nullptr,
                            int scaleAxis = 0, float *colSums = nullptr,
                            const ScaleFromAmax &own = ScaleFromAmax{});
  // A bias gradient summed by a transposed cast of a stored x (rows x
  // cols): scratch for the cast's 32-row tile sums (launchTransposedCast's
  // colSums) and the tree above them, or null where there is no db or
  // reduce_rows makes it alone afterwards (up to one tile of rows, where
  // its tree is that one row-order sum anyway); then db from them.
  float *castTileSums(const void *db, int64_t rows, int64_t cols);
  void biasGradientAfterCast(float *sums, const void *x, int64_t xDtype,
                             void *db, int64_t dbDtype, int64_t rows,
                             int64_t cols);
  // The scale of an active `own` when no cast kernel runs (nothing to
  // cast): the standalone scale_from_amax kernel.
  void scaleWithoutCast(const ScaleFromAmax &own);
  // Layout.cu: gptrt_reduce_rows's tree from a level of n rows (x itself,
  // or chunk sums in f32) to out; sums: room for the levels after it
  // (reduceRowsScratch(n, cols) floats).
  void sumRowLevels(const void *level, int64_t levelDtype, int64_t n,
                    int64_t cols, float *sums, void *out, int64_t outDtype);
  static int64_t reduceRowsScratch(int64_t rows, int64_t cols);
  // Gemm.cu: `bias` (n floats) rounded to bf16 in a buffer of this device,
  // for the bias epilogues of GEMMs with a bf16 result: cuBLASLt takes a
  // bias of D's type there (cublasLt.h, BIAS_DATA_TYPE).
  const uint16_t *bf16Bias(const float *bias, int64_t n);
  // Layout.cu: c = sum + bias (per column) as f32 or bf16, over `batch`
  // rows x cols blocks strideC apart: a bias epilogue cuBLASLt refused.
  void biasStore(const float *sum, const float *bias, void *c, int64_t cDtype,
                 int64_t batch, int64_t rows, int64_t cols, int64_t strideC);
  // Gemm.cu: shared by the GEMM entry points.
  // Returns false, having written nothing, only where `mayRefuse` and
  // cublasLtMatmul refuses the heuristic's algorithm after all (not
  // supported, or an invalid combination).
  bool runGemm(GemmPlan &plan, const GemmKey &key, const void *a, const void *b,
               void *c, const float *scaleA, const float *scaleB,
               const void *bias, const void *aux = nullptr,
               bool mayRefuse = false);
  // The cached plan of a shape; throws when cuBLASLt has no algorithm,
  // unless `mayRefuse`, which returns a plan marked refused instead. `bias`
  // (with key.alignBias) and `aux` (with key.epilogue) are shown to the
  // heuristic, which reads their alignment from the pointers.
  GemmPlan &planFor(const GemmKey &key, bool mayRefuse = false,
                    const void *bias = nullptr, const void *aux = nullptr);

  // FlashAttention.cu: whether the flash kernels take this call (see
  // setFlashAttention), and the kernels themselves.
  bool flashAttentionApplies(int64_t batch, int64_t seq, int64_t width,
                             int64_t heads, int64_t dtype) const;
  // ldQkv: the row stride of q, k, v and dq, dk, dv (width, or 3 width
  // when they are packed); out and dout have rows of width.
  // fp8 (forward): the epilogue of out as stored, its amax and codes
  // taken as it is written; amax (backward), when not null: the amax of
  // dq, dk and dv as stored.
  void flashAttentionForward(const void *q, const void *k, const void *v,
                             void *out, float *lse, int64_t batch, int64_t seq,
                             int64_t width, int64_t heads, bool causal,
                             int64_t ldQkv, const Fp8Epilogue &fp8 = {});
  void flashAttentionBackward(const void *dout, const void *q, const void *k,
                              const void *v, const void *out, const float *lse,
                              void *dq, void *dk, void *dv, int64_t batch,
                              int64_t seq, int64_t width, int64_t heads,
                              bool causal, int64_t ldQkv,
                              float *amax = nullptr);

  int ordinal_;
  int cc_ = 0;
  bool flashAttention_ = false;
  bool outerVecScales_ = false;            // setRowwiseOuterVecScales
  int64_t outerVecGemms_ = 0;              // outerVecGemms
  std::vector<cudaEvent_t> bucketEvents_;  // recordBucketEvent's, by bucket
  size_t maxSharedBytesPerBlock_ = 0;  // with the opt-in attribute
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
  float *gemmScales_ = nullptr;  // 2 floats: FP8 dequantisation scales
  // A device buffer that only grows (grow()).
  struct GrowingBuffer {
    void *data = nullptr;
    size_t bytes = 0;
  };
  // At least `bytes` of `buffer` (at least `minimum` when it must grow).
  // Growing synchronises and drops the CUDA graphs, which hold the old
  // address; it is refused during a capture, which the warm-up call's
  // sizes are meant to make unnecessary.
  void *grow(GrowingBuffer &buffer, size_t bytes, size_t minimum,
             const char *what);
  // The bias of a GEMM with a bf16 result, rounded to bf16 (bf16Bias).
  GrowingBuffer bf16Bias_;
  // Packed attention on the baseline kernels: q, k, v (and their
  // gradients) copied out of (and back into) the packed buffer.
  GrowingBuffer attentionStaging_;
  // FP8 GEMM operands transposed into the TN layout (scaledGemm).
  GrowingBuffer fp8Operands_;
  // rowwiseOuterVecGemm's dequantisation scales: a's rows, then b's
  // columns.
  GrowingBuffer rowwiseDequant_;
  GrowingBuffer scratch_;
  float *stepScalars_ = nullptr;  // 3 floats, see uploadStepScalars
  float *unitScales_ = nullptr;   // 2 floats of 1: the rowwise GEMM's
  void *castStats_ = nullptr;     // Fp8.cu's per-slot counters
  // recordCastStats and recordRowwiseCastStats: castStatsKernel on `slot`
  // (scaleAxis as that kernel takes it).
  void launchCastStats(const CastSource &x, int64_t n, int64_t cols,
                       const float *scale, int scaleAxis, int64_t format,
                       int64_t slot);
  size_t castStatsSlots_ = 0, castStatsCapacity_ = 0;
  std::vector<cudaGraphExec_t> graphs_;
  void dropGraphs();
  std::map<GemmKey, GemmPlan> plans_;
};

} // namespace gptrt::cuda

#endif // GPTRT_CUDA_DEVICEIMPL_H
