// GEMMs through cuBLASLt, the forms of gptrt_gemm: f32, bf16 and FP8
// operands, each plan (descriptors + the heuristic's algorithm)
// cached per shape, one workspace for all.
//
// Row-major vs column-major. gptrt.h's matrices are row-major; cuBLAS's
// are column-major. A row-major [r, c] buffer read column-major is the
// [c, r] matrix, its transpose. So for C = op(A) op(B) (row-major, C
// [m, n]) we ask cuBLAS for C^T = op(B)^T op(A)^T, i.e. a column-major
// [n, m] product whose first operand is our B and second our A, with the
// same transpose flags: our b stored [k, n] (transB 0) is, column-major,
// the [n, k] matrix op(B)^T already (cuBLAS op N); stored [n, k] (transB 1)
// it reads as [k, n] and needs op T. Likewise for a. No data moves.
//
// FP8 on Hopper: cuBLASLt's FP8 kernels take only the "TN" form, cuBLAS
// operand 1 transposed and operand 2 not. With the swap above that is our
// transB = 1 and transA = 0: c = a [m, k] times b stored [n, k], i.e.
// x W^T with W [out, in], the layout of every forward linear layer. Other
// layouts (the backward's dX = dY W and dW = dY^T X) are handled by
// transposing the FP8 operand into scratch first with transposeBytes below
// (one extra pass over the operand; fp8-fuse-cast's cast+transpose removes
// it later). E5M2 x E5M2 is refused: cuBLASLt has no such kernel, and the
// "hybrid" policy never produces it.
#include "runtime/abi/gptrt.h"
#include "runtime/cuda/DeviceImpl.h"

#include <cuda_fp8.h>
#include <memory>
#include <type_traits>
#include <utility>

namespace gptrt::cuda {

namespace {

// dst[b][c][r] = src[b][r][c] for rows x cols bytes per batch, 32x32 tiles
// through shared memory (padded by one to avoid bank conflicts on columns).
__global__ void transposeBytesKernel(const uint8_t *src, uint8_t *dst,
                                     int64_t rows, int64_t cols,
                                     int64_t srcStride) {
  __shared__ uint8_t tile[32][33];
  const uint8_t *s = src + blockIdx.z * srcStride;
  uint8_t *d = dst + blockIdx.z * rows * cols;
  const int64_t r0 = int64_t(blockIdx.y) * 32, c0 = int64_t(blockIdx.x) * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols)
      tile[i][threadIdx.x] = s[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols)
      d[c * rows + r] = tile[threadIdx.x][i];
  }
}

// The same for rows and cols multiples of 4 on 4-byte aligned buffers, in
// 4-byte words: 64 x 64 tiles, a row of 16 words; a thread loads word
// `word` of tile rows first, + 16, ... and stores word `word` (tile rows
// 4 word .. 4 word + 3, a byte each) of output rows first, + 16, ... --
// four times fewer memory instructions than a byte each.
constexpr int kWordTile = 64;
constexpr int kTileWords = kWordTile / 4;
__global__ void transposeWordsKernel(const uint8_t *src, uint8_t *dst,
                                     int64_t rows, int64_t cols,
                                     int64_t srcStride) {
  // Rows padded by a word: a warp's byte reads down a column meet at most
  // two to a bank.
  __shared__ __align__(4) uint8_t tile[kWordTile][kWordTile + 4];
  const uint8_t *s = src + blockIdx.z * srcStride;
  uint8_t *d = dst + blockIdx.z * rows * cols;
  const int64_t r0 = int64_t(blockIdx.y) * kWordTile,
                c0 = int64_t(blockIdx.x) * kWordTile;
  const int word = threadIdx.x % kTileWords, first = threadIdx.x / kTileWords;
  const int step = blockDim.x / kTileWords;
  for (int i = first; i < kWordTile; i += step) {
    const int64_t r = r0 + i, c = c0 + 4 * word;
    if (r < rows && c < cols) // c + 3 < cols too: cols is a multiple of 4
      *reinterpret_cast<uint32_t *>(&tile[i][4 * word]) =
          *reinterpret_cast<const uint32_t *>(s + r * cols + c);
  }
  __syncthreads();
  for (int j = first; j < kWordTile; j += step) {
    const int64_t c = c0 + j, r = r0 + 4 * word;
    if (c < cols && r < rows) { // rows r .. r + 3 all there, as above
      const int i = 4 * word;
      const uint32_t v = uint32_t(tile[i][j]) | uint32_t(tile[i + 1][j]) << 8 |
                         uint32_t(tile[i + 2][j]) << 16 |
                         uint32_t(tile[i + 3][j]) << 24;
      *reinterpret_cast<uint32_t *>(d + c * rows + r) = v;
    }
  }
}

__global__ void reciprocalKernel(const float *a, const float *b, float *out) {
  out[0] = 1.0f / *a;
  out[1] = 1.0f / *b;
}

cudaDataType fp8Type(int64_t format) {
  return format == GPTRT_FP8_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

// Largest power of two (<= 256) dividing the address: the heuristic must
// know it, or it may pick a kernel that needs more alignment than we have.
int64_t alignmentOf(const void *p) {
  uintptr_t u = reinterpret_cast<uintptr_t>(p);
  int64_t a = 256;
  while (a > 1 && (u % a) != 0)
    a >>= 1;
  return a;
}

// A batch sharing one b (stride_b 0) over contiguous, untransposed a and
// c is a single GEMM with batch * m rows: fewer, larger launches, and no
// reliance on cuBLASLt accepting a zero batch stride.
void foldSharedB(int64_t &batch, int64_t &m, int64_t k, int64_t n,
                 bool transA, int64_t strideA, int64_t strideB,
                 int64_t strideC) {
  if (batch > 1 && strideB == 0 && !transA && strideA == m * k &&
      strideC == m * n) {
    m *= batch;
    batch = 1;
  }
}

void requireDims(int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (batch < 0 || m < 0 || n < 0 || k < 0)
    throw std::invalid_argument(
        "batch, m, n, k = " + std::to_string(batch) + ", " +
        std::to_string(m) + ", " + std::to_string(n) + ", " +
        std::to_string(k) + ", expected all >= 0");
}

} // namespace

GemmPlan::~GemmPlan() {
  if (a)
    cublasLtMatrixLayoutDestroy(a);
  if (b)
    cublasLtMatrixLayoutDestroy(b);
  if (c)
    cublasLtMatrixLayoutDestroy(c);
  if (op)
    cublasLtMatmulDescDestroy(op);
}

GemmPlan &DeviceImpl::planFor(const GemmKey &key, bool mayRefuse,
                              const void *bias, const void *aux) {
  auto found = plans_.find(key);
  if (found != plans_.end())
    return found->second;
  GemmPlan &plan = plans_[key];
  try {
    // cuBLAS operand 1 is our b, operand 2 our a (see the file comment).
    const bool fp8 = key.kind == 2 || key.kind == 4;
    const cudaDataType ab = key.kind == 0 ? CUDA_R_32F
                            : fp8         ? CUDA_R_8F_E4M3
                                          : CUDA_R_16BF;
    const cudaDataType type1 = fp8 ? fp8Type(key.formatB & 0xFF) : ab;
    const cudaDataType type2 = fp8 ? fp8Type(key.formatA & 0xFF) : ab;
    check(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    cublasOperation_t op1 = key.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op2 = key.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA,
                                         &op1, sizeof op1),
          "set TRANSA");
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB,
                                         &op2, sizeof op2),
          "set TRANSB");
    if (fp8) {
      // Off: cuBLASLt promotes the tensor cores' partial sums to full f32
      // at intervals (the "split accumulation" of the backward GEMMs).
      const int8_t fastAccum = key.fastAccum ? 1 : 0;
      check(cublasLtMatmulDescSetAttribute(plan.op,
                                           CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                           &fastAccum, sizeof fastAccum),
            "set FAST_ACCUM");
      if (key.outerVecScales) {
        // cuBLAS's A (our b) scaled per row of its M (our columns), its B
        // (our a) per column of its N (our rows): cublasLt.h, OUTER_VEC_32F.
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        for (auto attribute : {CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                               CUBLASLT_MATMUL_DESC_B_SCALE_MODE})
          if (cublasLtMatmulDescSetAttribute(plan.op, attribute, &mode,
                                             sizeof mode) !=
              CUBLAS_STATUS_SUCCESS) {
            // An older cuBLASLt without the attribute: no such algorithm.
            plan.refused = true;
            return plan;
          }
      }
    }
    if (key.alignBias || key.epilogue != kNoGelu) {
      // Our bias runs along c's columns, which are the rows of cuBLAS's
      // column-major D (see the file comment): the BIAS epilogue's vector,
      // added to the f32 sum before D is rounded. It is f32, except for a
      // bf16 D, whose bias cuBLASLt wants in bf16 (bf16Bias).
      // BGRADB writes our a's column sums through the bias pointer, in D's
      // type (cublasLt.h, BIAS_POINTER: "Bias gradient case").
      cublasLtEpilogue_t epilogue =
          key.epilogue == kGeluAuxBias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
          : key.epilogue == kDgelu     ? CUBLASLT_EPILOGUE_DGELU
          : key.epilogue == kBgradB    ? CUBLASLT_EPILOGUE_BGRADB
                                       : CUBLASLT_EPILOGUE_BIAS;
      check(cublasLtMatmulDescSetAttribute(plan.op,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof epilogue),
            "set EPILOGUE");
      if (key.alignBias) {
        cudaDataType biasType =
            key.kind == 3 || key.kind == 4 ? CUDA_R_16BF : CUDA_R_32F;
        check(cublasLtMatmulDescSetAttribute(
                  plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                  sizeof biasType),
              "set BIAS_DATA_TYPE");
        check(cublasLtMatmulDescSetAttribute(plan.op,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &bias, sizeof bias),
              "set BIAS_POINTER");
      }
      if (key.epilogue == kGeluAuxBias || key.epilogue == kDgelu) {
        // The GELU input matrix, laid out as D (column-major, n rows: our
        // row-major [m, n] result), in D's type (the default aux type).
        const int64_t ld = key.n;
        check(cublasLtMatmulDescSetAttribute(
                  plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                  sizeof aux),
              "set EPILOGUE_AUX_POINTER");
        check(
            cublasLtMatmulDescSetAttribute(
                plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld),
            "set EPILOGUE_AUX_LD");
        if (key.batch > 1) {
          const int64_t stride = key.strideC;
          check(cublasLtMatmulDescSetAttribute(
                    plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                    &stride, sizeof stride),
                "set EPILOGUE_AUX_BATCH_STRIDE");
        }
      }
    }
    // Stored shapes, column-major: operand 1 is n x k (op N) or k x n (op T).
    const uint64_t rows1 = key.transB ? key.k : key.n;
    const uint64_t cols1 = key.transB ? key.n : key.k;
    const uint64_t rows2 = key.transA ? key.m : key.k;
    const uint64_t cols2 = key.transA ? key.k : key.m;
    check(cublasLtMatrixLayoutCreate(&plan.a, type1, rows1, cols1, rows1),
          "layout of b");
    check(cublasLtMatrixLayoutCreate(&plan.b, type2, rows2, cols2, rows2),
          "layout of a");
    // A bf16 D (kinds 3, 4): C, unused with beta 0, takes D's type, the
    // combination cuBLASLt's FP8 kernels accept.
    check(cublasLtMatrixLayoutCreate(&plan.c,
                                     key.kind == 3 || key.kind == 4
                                         ? CUDA_R_16BF
                                         : CUDA_R_32F,
                                     key.n, key.m, key.n),
          "layout of c");
    if (key.batch > 1) {
      const int32_t count = static_cast<int32_t>(key.batch);
      const int64_t s1 = key.strideB, s2 = key.strideA, s3 = key.strideC;
      struct {
        cublasLtMatrixLayout_t layout;
        int64_t stride;
      } all[3] = {{plan.a, s1}, {plan.b, s2}, {plan.c, s3}};
      for (auto &l : all) {
        check(cublasLtMatrixLayoutSetAttribute(
                  l.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                  sizeof count),
              "set BATCH_COUNT");
        check(cublasLtMatrixLayoutSetAttribute(
                  l.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                  &l.stride, sizeof l.stride),
              "set STRIDED_BATCH_OFFSET");
      }
    }
    cublasLtMatmulPreference_t created = nullptr;
    check(cublasLtMatmulPreferenceCreate(&created), "preference");
    const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                          decltype(&cublasLtMatmulPreferenceDestroy)>
        pref(created, &cublasLtMatmulPreferenceDestroy);
    const uint64_t ws = workspaceBytes_;
    check(cublasLtMatmulPreferenceSetAttribute(
              pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
              sizeof ws),
          "set MAX_WORKSPACE_BYTES");
    // The key's alignment fields hold the pointers' alignments (runGemm).
    // Unset, cuBLASLt assumes 256 bytes and may pick a kernel that faults
    // on less, so a refused setting is an error.
    const uint32_t alignA = uint32_t(key.formatA >> 8),
                   alignB = uint32_t(key.formatB >> 8),
                   alignC = uint32_t(key.alignC);
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t>
        alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignB},
                        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignA},
                        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC},
                        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignC}};
    for (const auto &[attribute, bytes] : alignments)
      check(cublasLtMatmulPreferenceSetAttribute(pref.get(), attribute, &bytes,
                                                 sizeof bytes),
            "set MIN_ALIGNMENT");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt_, plan.op, plan.a, plan.b, plan.c,
                                       plan.c, pref.get(), 1, &result, &found);
    if ((st != CUBLAS_STATUS_SUCCESS || found == 0) && mayRefuse) {
      plan.refused = true;
      return plan;
    }
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      throw std::runtime_error(
          "cuBLASLt has no algorithm for this GEMM (batch " +
          std::to_string(key.batch) + ", m " + std::to_string(key.m) +
          ", n " + std::to_string(key.n) + ", k " + std::to_string(key.k) +
          ", trans_a " + std::to_string(key.transA) + ", trans_b " +
          std::to_string(key.transB) + ", kind " + std::to_string(key.kind) +
          "): check the shapes; FP8 needs m, n, k multiples of 16");
    plan.algo = result.algo;
  } catch (...) {
    plans_.erase(key);
    throw;
  }
  return plan;
}

bool DeviceImpl::runGemm(GemmPlan &plan, const GemmKey &key, const void *a,
                         const void *b, void *c, const float *scaleA,
                         const float *scaleB, const void *bias, const void *aux,
                         bool mayRefuse) {
  // beta 1 adds the product to C, which is D (an accumulating f32 D).
  const float alpha = 1.0f, beta = key.accumulate ? 1.0f : 0.0f;
  if (key.alignBias)
    check(cublasLtMatmulDescSetAttribute(plan.op,
                                         CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                         &bias, sizeof bias),
          "set BIAS_POINTER");
  if (key.epilogue == kGeluAuxBias || key.epilogue == kDgelu)
    check(cublasLtMatmulDescSetAttribute(
              plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
              sizeof aux),
          "set EPILOGUE_AUX_POINTER");
  if (key.kind == 2 || key.kind == 4) {
    // cuBLASLt multiplies by the scales it is given; ours divide (q = x *
    // scale), so it gets their reciprocals, operand 1 (our b) first:
    // outer-vector scales come as reciprocals already; scalars are
    // inverted here, into their own small buffer (scratch may hold the
    // transposed operands).
    const float *inv1 = scaleB, *inv2 = scaleA;
    if (!key.outerVecScales) {
      reciprocalKernel<<<1, 1, 0, stream_>>>(scaleB, scaleA, gemmScales_);
      checkLaunch("gptrt_gemm.fp8 (scale reciprocals)");
      inv1 = gemmScales_;
      inv2 = gemmScales_ + 1;
    }
    check(cublasLtMatmulDescSetAttribute(plan.op,
                                         CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                         &inv1, sizeof inv1),
          "set A_SCALE_POINTER");
    check(cublasLtMatmulDescSetAttribute(plan.op,
                                         CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                         &inv2, sizeof inv2),
          "set B_SCALE_POINTER");
  }
  const cublasStatus_t status = cublasLtMatmul(
      lt_, plan.op, &alpha, b, plan.a, a, plan.b, &beta, c, plan.c, c, plan.c,
      &plan.algo, workspace_, workspaceBytes_, stream_);
  // cuBLASLt answers an unsupported combination of scale modes or types
  // with either status (cublasLt.h).
  if (mayRefuse && (status == CUBLAS_STATUS_NOT_SUPPORTED ||
                    status == CUBLAS_STATUS_INVALID_VALUE))
    return false;
  check(status, "cublasLtMatmul");
  return true;
}

void DeviceImpl::zeroBatches(void *c, size_t elementBytes, int64_t batch,
                             int64_t count, int64_t stride) {
  if (batch == 0 || count == 0)
    return;
  if (batch == 1 || stride <= count) { // contiguous (or overlapping) batches
    zero(c, size_t((batch - 1) * stride + count) * elementBytes);
    return;
  }
  check(cudaMemset2DAsync(c, size_t(stride) * elementBytes, 0,
                          size_t(count) * elementBytes, size_t(batch), stream_),
        "cudaMemset2DAsync (a GEMM's empty sum)");
}

const uint16_t *DeviceImpl::bf16Bias(const float *bias, int64_t n) {
  uint16_t *codes = static_cast<uint16_t *>(
      grow(bf16Bias_, size_t(n) * sizeof(uint16_t), 65536 * sizeof(uint16_t),
           "bf16 bias buffer"));
  // On the stream, before the GEMM that reads it; the next GEMM's copy
  // comes after this one's GEMM.
  convert(bias, codes, n, GPTRT_DTYPE_F32, GPTRT_DTYPE_BF16);
  return codes;
}

template <typename T>
bool DeviceImpl::plainGemm(int kind, const T *a, const T *b, void *c,
                           int64_t batch, int64_t m, int64_t n, int64_t k,
                           bool transA, bool transB, int64_t strideA,
                           int64_t strideB, int64_t strideC, const float *bias,
                           const void *aux, int epilogue, void *biasGrad,
                           bool accumulate) {
  requireDims(batch, m, n, k);
  if (accumulate && (kind > 1 || bias))
    throw std::logic_error("plainGemm: only an f32 result without a bias "
                           "accumulates");
  if (batch == 0 || m == 0 || n == 0)
    return true;
  if (k == 0) {
    if (bias || epilogue != kNoGelu)
      return false;  // the caller's path adds the bias to zeros
    if (accumulate)
      return true; // c += an empty sum
    // An empty sum: zeros, whose bits are 0 in f32 and in bf16.
    zeroBatches(c, kind == 3 ? sizeof(uint16_t) : sizeof(float), batch, m * n,
                strideC);
    return true;
  }
  // Alignments travel in the format fields' upper bits (unused here).
  foldSharedB(batch, m, k, n, transA, strideA, strideB, strideC);
  // The bias pointer carries a bias in (f32, or rounded to bf16 for a bf16
  // result), or BGRADB's gradient out, in the result's type.
  const void *biasArg = epilogue == kBgradB ? biasGrad : bias;
  if (bias && kind == 3)
    biasArg = bf16Bias(bias, n);
  GemmKey key{kind,
              batch,
              m,
              n,
              k,
              strideA,
              strideB,
              strideC,
              transA,
              transB,
              alignmentOf(a) << 8,
              alignmentOf(b) << 8,
              alignmentOf(c),
              biasArg ? alignmentOf(biasArg) : 0};
  key.epilogue = epilogue;
  key.accumulate = accumulate;
  key.alignAux =
      epilogue == kGeluAuxBias || epilogue == kDgelu ? alignmentOf(aux) : 0;
  GemmPlan &plan = planFor(
      key, /*mayRefuse=*/bias != nullptr || epilogue != kNoGelu, biasArg, aux);
  if (plan.refused)
    return false;
  runGemm(plan, key, a, b, c, nullptr, nullptr, biasArg, aux);
  return true;
}

void DeviceImpl::matmul(const float *a, const float *b, float *c,
                        int64_t batch, int64_t m, int64_t n, int64_t k,
                        bool transA, bool transB, int64_t strideA,
                        int64_t strideB, int64_t strideC) {
  plainGemm(0, a, b, c, batch, m, n, k, transA, transB, strideA,
            strideB, strideC);
}

void DeviceImpl::matmulBf16(const uint16_t *a, const uint16_t *b,
                            const float *bias, void *c, int64_t outDtype,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            bool transA, bool transB, int64_t strideA,
                            int64_t strideB, int64_t strideC) {
  const int kind = outDtype == GPTRT_DTYPE_BF16 ? 3 : 1;
  if (plainGemm(kind, a, b, c, batch, m, n, k, transA, transB, strideA, strideB,
                strideC, bias, nullptr, kNoGelu, nullptr,
                outDtype == kAccumulateF32))
    return;
  // No bias epilogue for this shape (or k = 0): the f32 GEMM into scratch,
  // then one pass that adds the bias and stores c -- the same numbers,
  // since the epilogue too adds in f32 before the one rounding.
  const int64_t extent = (batch - 1) * strideC + m * n;
  float *sum = static_cast<float *>(scratch(size_t(extent) * sizeof(float)));
  plainGemm(1, a, b, sum, batch, m, n, k, transA, transB, strideA, strideB,
            strideC);
  biasStore(sum, bias, c, outDtype, batch, m, n, strideC);
}

void DeviceImpl::matmulBf16BiasGelu(const uint16_t *a, const uint16_t *b,
                                    const float *bias, void *pre,
                                    int64_t preDtype, void *out,
                                    int64_t outDtype, int64_t batch, int64_t m,
                                    int64_t n, int64_t k, bool transA,
                                    bool transB, int64_t strideA,
                                    int64_t strideB, int64_t strideC) {
  // cuBLASLt stores the aux matrix in D's type and wants its leading
  // dimension (n) a multiple of 8.
  const int kind = outDtype == GPTRT_DTYPE_BF16 ? 3 : 1;
  if (preDtype == outDtype && n % 8 == 0 &&
      plainGemm(kind, a, b, out, batch, m, n, k, transA, transB, strideA,
                strideB, strideC, bias, pre, kGeluAuxBias))
    return;
  matmulBf16(a, b, bias, pre, preDtype, batch, m, n, k, transA, transB, strideA,
             strideB, strideC);
  geluForward(pre, preDtype, out, outDtype, batch * m * n);
}

void DeviceImpl::matmulBf16Bgrad(const uint16_t *a, const uint16_t *b, void *c,
                                 int64_t outDtype, void *db, int64_t dbDtype,
                                 int64_t m, int64_t n, int64_t k, bool transB,
                                 int64_t strideA, int64_t strideB,
                                 int64_t strideC) {
  // cuBLASLt writes the bias gradient in the result's type. With an f32
  // result and a db of another dtype its f32 sums go to scratch first, then
  // are rounded into a bf16 db (once, as reduceRows would) or added into
  // an accumulating one.
  const int kind = outDtype == GPTRT_DTYPE_BF16 ? 3 : 1;
  const bool accumulate = outDtype == kAccumulateF32;
  const int64_t resultDtype = accumulate ? GPTRT_DTYPE_F32 : outDtype;
  const bool viaScratch =
      dbDtype != resultDtype && resultDtype == GPTRT_DTYPE_F32;
  void *sums = viaScratch ? scratch(size_t(m) * sizeof(float)) : db;
  // (An empty GEMM runs no epilogue: the fallback still sums db.)
  if ((dbDtype == resultDtype || viaScratch) && m > 0 && n > 0 && k > 0 &&
      plainGemm(kind, a, b, c, 1, m, n, k, /*transA=*/true, transB, strideA,
                strideB, strideC, nullptr, nullptr, kBgradB, sums,
                accumulate)) {
    if (dbDtype == kAccumulateF32)
      this->accumulate(sums, GPTRT_DTYPE_F32, static_cast<float *>(db), m);
    else if (viaScratch)
      convert(sums, db, m, GPTRT_DTYPE_F32, dbDtype);
    return;
  }
  matmulBf16(a, b, nullptr, c, outDtype, 1, m, n, k, true, transB, strideA,
             strideB, strideC);
  // a is stored [k, m]: db is the sum of its k rows.
  reduceRows(a, GPTRT_DTYPE_BF16, db, dbDtype, k, m);
}

void DeviceImpl::matmulBf16Dgelu(const uint16_t *a, const uint16_t *b,
                                 const void *pre, int64_t preDtype, void *dx,
                                 int64_t dxDtype, int64_t dgDtype,
                                 int64_t batch, int64_t m, int64_t n, int64_t k,
                                 bool transA, bool transB, int64_t strideA,
                                 int64_t strideB, int64_t strideC) {
  const int kind = dxDtype == GPTRT_DTYPE_BF16 ? 3 : 1;
  if (preDtype == dxDtype && n % 8 == 0 &&
      plainGemm(kind, a, b, dx, batch, m, n, k, transA, transB, strideA,
                strideB, strideC, nullptr, pre, kDgelu))
    return;
  // The product in scratch as the unfused GEMM stored it, then the GELU
  // gradient kernel.
  const int64_t count = batch * m * n;
  void *dg =
      scratch(size_t(count) *
              (dgDtype == GPTRT_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float)));
  matmulBf16(a, b, nullptr, dg, dgDtype, batch, m, n, k, transA, transB,
             strideA, strideB, strideC);
  geluBackward(dg, dgDtype, pre, preDtype, dx, dxDtype, count);
}

void DeviceImpl::transposeBytes(const uint8_t *src, uint8_t *dst, int64_t rows,
                                int64_t cols, int64_t batch,
                                int64_t srcStride) {
  if (rows <= 0 || cols <= 0 || batch <= 0)
    return;
  auto aligned4 = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 4 == 0;
  };
  if (rows % 4 == 0 && cols % 4 == 0 && srcStride % 4 == 0 && aligned4(src) &&
      aligned4(dst)) {
    const dim3 grid(unsigned((cols + kWordTile - 1) / kWordTile),
                    unsigned((rows + kWordTile - 1) / kWordTile),
                    unsigned(batch));
    transposeWordsKernel<<<grid, 256, 0, stream_>>>(src, dst, rows, cols,
                                                    srcStride);
  } else {
    const dim3 threads(32, 8);
    const dim3 grid(unsigned((cols + 31) / 32), unsigned((rows + 31) / 32),
                    unsigned(batch));
    transposeBytesKernel<<<grid, threads, 0, stream_>>>(src, dst, rows, cols,
                                                        srcStride);
  }
  checkLaunch("transposing FP8 codes");
}

void DeviceImpl::scaledMatmul(const uint8_t *a, const uint8_t *b,
                              const float *scaleA, const float *scaleB, void *c,
                              int64_t batch, int64_t m, int64_t n, int64_t k,
                              bool transA, bool transB, int64_t strideA,
                              int64_t strideB, int64_t strideC, int64_t formatA,
                              int64_t formatB, bool fastAccum,
                              int64_t outDtype) {
  scaledGemm(a, b, scaleA, scaleB, c, batch, m, n, k, transA, transB, strideA,
             strideB, strideC, formatA, formatB, fastAccum, outDtype, nullptr);
}

void DeviceImpl::scaledMatmulBias(const uint8_t *a, const uint8_t *b,
                                  const float *scaleA, const float *scaleB,
                                  const float *bias, void *c, int64_t batch,
                                  int64_t m, int64_t n, int64_t k, bool transA,
                                  bool transB, int64_t strideA, int64_t strideB,
                                  int64_t strideC, int64_t formatA,
                                  int64_t formatB, bool fastAccum,
                                  int64_t outDtype) {
  // The FP8 kernels take a bias of D's type for a bf16 D (cublasLt.h,
  // BIAS_DATA_TYPE); an f32 D, or a shape without a bias epilogue, gets
  // the GEMM and then the bias added in place (add reads each element
  // before it writes it).
  if (outDtype == GPTRT_DTYPE_BF16 &&
      scaledGemm(a, b, scaleA, scaleB, c, batch, m, n, k, transA, transB,
                 strideA, strideB, strideC, formatA, formatB, fastAccum,
                 outDtype, bias))
    return;
  scaledMatmul(a, b, scaleA, scaleB, c, batch, m, n, k, transA, transB, strideA,
               strideB, strideC, formatA, formatB, fastAccum, outDtype);
  add(c, outDtype, bias, GPTRT_DTYPE_F32, c, outDtype, batch * m, n, true);
}

namespace {

void requireFp8Gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t formatA, int64_t formatB) {
  requireDims(batch, m, n, k);
  for (int64_t f : {formatA, formatB})
    if (f != GPTRT_FP8_E4M3 && f != GPTRT_FP8_E5M2)
      throw std::invalid_argument("fp8 format " + std::to_string(f) +
                                  ", expected 0 (E4M3) or 1 (E5M2)");
  if (formatA == GPTRT_FP8_E5M2 && formatB == GPTRT_FP8_E5M2)
    throw std::invalid_argument(
        "format_a and format_b are both E5M2, expected at least one E4M3: "
        "cuBLASLt has no E5M2 x E5M2 kernel; choose a policy that casts one "
        "operand to E4M3");
  if (m % 16 || n % 16 || k % 16)
    throw std::invalid_argument(
        "FP8 GEMM of m " + std::to_string(m) + ", n " + std::to_string(n) +
        ", k " + std::to_string(k) +
        ", expected multiples of 16 (cuBLASLt FP8): the precision policy "
        "must keep this layer in bf16");
}

Fp8TnOperands tnOperandsOf(int64_t batch, int64_t m, int64_t n, int64_t k,
                           bool transA, bool transB, int64_t strideA,
                           int64_t strideB) {
  Fp8TnOperands tn;
  tn.moveA = transA;  // stored [k, m] per batch
  tn.moveB = !transB; // stored [k, n] per batch
  tn.bBatches = strideB == 0 ? 1 : batch;
  const size_t bytesA = tn.moveA ? size_t(batch * m * k) : 0;
  const size_t bytesB = tn.moveB ? size_t(tn.bBatches * n * k) : 0;
  // 256-byte boundaries keep both copies aligned for cuBLASLt.
  tn.offB = (bytesA + 255) / 256 * 256;
  tn.bytes = tn.offB + bytesB + 256;
  tn.strideA = tn.moveA ? m * k : strideA;
  tn.strideB = tn.moveB ? (strideB == 0 ? 0 : n * k) : strideB;
  return tn;
}

// out[r] = 1 / scaleA(r) for a's rows, outB[j] = 1 / scaleB(j) for b's
// columns: the factors cuBLASLt multiplies by where our casts multiplied
// (q = x * scale). Correctly rounded, so exact for power-of-two scales.
__global__ void dequantVectorsKernel(const float *scaleA, bool rowwiseA,
                                     int64_t rows, const float *scaleB,
                                     bool rowwiseB, int64_t cols, float *outA,
                                     float *outB) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < rows + cols; i += int64_t(gridDim.x) * blockDim.x) {
    if (i < rows)
      outA[i] = __frcp_rn(rowwiseA ? scaleA[i] : scaleA[0]);
    else
      outB[i - rows] = __frcp_rn(rowwiseB ? scaleB[i - rows] : scaleB[0]);
  }
}

} // namespace

GemmKey DeviceImpl::fp8KeyOf(const Fp8TnOperands &tn, const uint8_t *a,
                             const uint8_t *b, const void *c, int64_t batch,
                             int64_t m, int64_t n, int64_t k, int64_t strideC,
                             int64_t formatA, int64_t formatB, bool fastAccum,
                             int64_t outDtype, const void *bias) const {
  foldSharedB(batch, m, k, n, false, tn.strideA, tn.strideB, strideC);
  // A moved operand sits at a 256-byte boundary of fp8Operands_.
  const int64_t alignA = tn.moveA ? 256 : alignmentOf(a),
                alignB = tn.moveB ? 256 : alignmentOf(b);
  GemmKey key{outDtype == GPTRT_DTYPE_BF16 ? 4 : 2,
              batch,
              m,
              n,
              k,
              tn.strideA,
              tn.strideB,
              strideC,
              false,
              true,
              formatA | (alignA << 8),
              formatB | (alignB << 8),
              alignmentOf(c),
              bias ? alignmentOf(bias) : 0};
  key.fastAccum = fastAccum;
  key.accumulate = outDtype == kAccumulateF32;
  return key;
}

void DeviceImpl::moveToTn(const Fp8TnOperands &tn, const uint8_t *a,
                          const uint8_t *b, int64_t batch, int64_t m, int64_t n,
                          int64_t k, int64_t strideA, int64_t strideB,
                          const uint8_t *&aT, const uint8_t *&bT) {
  aT = a;
  bT = b;
  if (!tn.moveA && !tn.moveB)
    return;
  // Their own buffer, not scratch: callers (the rowwise GEMM's f32 sum)
  // may hold scratch across this call.
  uint8_t *tmp = static_cast<uint8_t *>(
      grow(fp8Operands_, tn.bytes, size_t(1) << 20, "FP8 GEMM operand buffer"));
  if (tn.moveA) {
    transposeBytes(a, tmp, k, m, batch, strideA);
    aT = tmp;
  }
  if (tn.moveB) {
    transposeBytes(b, tmp + tn.offB, k, n, tn.bBatches, strideB);
    bT = tmp + tn.offB;
  }
}

bool DeviceImpl::scaledGemm(const uint8_t *a, const uint8_t *b,
                            const float *scaleA, const float *scaleB, void *c,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            bool transA, bool transB, int64_t strideA,
                            int64_t strideB, int64_t strideC, int64_t formatA,
                            int64_t formatB, bool fastAccum, int64_t outDtype,
                            const float *bias) {
  requireFp8Gemm(batch, m, n, k, formatA, formatB);
  // (An accumulating f32 D, kAccumulateF32, has no bias either.)
  if (bias != nullptr && outDtype != GPTRT_DTYPE_BF16)
    throw std::logic_error("scaledGemm: a bias epilogue needs a bf16 D (its "
                           "bias is rounded to bf16, D's type)");
  if (batch == 0 || m == 0 || n == 0)
    return bias == nullptr; // nothing to add the bias to either
  if (k == 0) {             // an empty sum, which cuBLASLt need not accept
    if (bias)
      return false; // the caller adds the bias to the zeros
    if (outDtype != kAccumulateF32)
      zeroBatches(
          c, outDtype == GPTRT_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float),
          batch, m * n, strideC);
    return true; // (an accumulating c gains nothing)
  }
  // The bias rounded to bf16, in its own buffer (scratch may hold the
  // transposed operands).
  const void *biasArg = bias ? bf16Bias(bias, n) : nullptr;
  const Fp8TnOperands tn =
      tnOperandsOf(batch, m, n, k, transA, transB, strideA, strideB);
  const GemmKey key = fp8KeyOf(tn, a, b, c, batch, m, n, k, strideC, formatA,
                               formatB, fastAccum, outDtype, biasArg);
  GemmPlan &plan = planFor(key, /*mayRefuse=*/bias != nullptr, biasArg);
  if (plan.refused)
    return false;
  const uint8_t *aT, *bT;
  moveToTn(tn, a, b, batch, m, n, k, strideA, strideB, aT, bT);
  runGemm(plan, key, aT, bT, c, scaleA, scaleB, biasArg);
  return true;
}

bool DeviceImpl::rowwiseOuterVecGemm(
    const uint8_t *a, const uint8_t *b, const float *scaleA, bool rowwiseA,
    const float *scaleB, bool rowwiseB, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, bool transA, bool transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    bool fastAccum, int64_t outDtype) {
  if (!outerVecScales_)
    return false;
  requireFp8Gemm(batch, m, n, k, formatA, formatB);
  if (batch == 0 || m == 0 || n == 0 || k == 0)
    return false; // the unit-scale path's own handling of empty GEMMs
  const Fp8TnOperands tn =
      tnOperandsOf(batch, m, n, k, transA, transB, strideA, strideB);
  GemmKey key = fp8KeyOf(tn, a, b, c, batch, m, n, k, strideC, formatA, formatB,
                         fastAccum, outDtype, nullptr);
  if (key.batch != 1)
    return false;
  key.outerVecScales = true;
  GemmPlan &plan = planFor(key, /*mayRefuse=*/true);
  if (plan.refused)
    return false;
  // a's rows (key.m: every batch's, folded) then, 256-byte aligned, b's
  // columns.
  const int64_t rows = key.m, offB = (rows + 63) / 64 * 64;
  float *dequant = static_cast<float *>(
      grow(rowwiseDequant_, size_t(offB + n) * sizeof(float), 65536,
           "rowwise GEMM dequantisation scales"));
  dequantVectorsKernel<<<gridFor(rows + n), 256, 0, stream_>>>(
      scaleA, rowwiseA, rows, scaleB, rowwiseB, n, dequant, dequant + offB);
  checkLaunch("gptrt_gemm.fp8_rowwise (dequantisation scales)");
  const uint8_t *aT, *bT;
  moveToTn(tn, a, b, batch, m, n, k, strideA, strideB, aT, bT);
  // A heuristic's answer is not a promise: a refusal at the call itself
  // falls back too (the vectors and moved operands were scratch only).
  if (!runGemm(plan, key, aT, bT, c, dequant, dequant + offB, nullptr, nullptr,
               /*mayRefuse=*/true)) {
    plan.refused = true;
    return false;
  }
  ++outerVecGemms_;
  return true;
}

} // namespace gptrt::cuda
