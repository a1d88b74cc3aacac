// rt-fuse-gemm-epilogue: folds the GELU after a bf16 GEMM, and the GELU
// gradient after a backward bf16 GEMM, into the GEMM's kernel (see
// Passes.td). Runs on rt.alloc buffers, before rt-plan-memory, so moving a
// result's definition up to the GEMM is what the planner then sees.
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"
#include "compiler/transforms/RtKernelQueries.h"
#include "runtime/abi/gptrt.h"

namespace gptc {
#define GEN_PASS_DEF_RTFUSEGEMMEPILOGUE
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

int64_t gemmField(rt::KernelOp gemm, StringRef name) {
  return *rt::descriptorField(gemm, "gemm_desc", name);
}

struct GemmShape {
  int64_t elements; // batch * m * n
  bool contiguous;
};

GemmShape shapeOf(rt::KernelOp gemm) {
  const int64_t batch = gemmField(gemm, "batch"), m = gemmField(gemm, "m"),
                n = gemmField(gemm, "n");
  return {batch * m * n, batch == 1 || gemmField(gemm, "stride_c") == m * n};
}

bool isFp8(int64_t dtype) {
  return dtype == GPTRT_DTYPE_E4M3 || dtype == GPTRT_DTYPE_E5M2;
}

class RtFuseGemmEpiloguePass
    : public gptc::impl::RtFuseGemmEpilogueBase<RtFuseGemmEpiloguePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // GEMMs with no epilogue yet, storing their product.
      SmallVector<rt::KernelOp> gemms;
      func.walk([&](rt::KernelOp op) {
        if (op.getKernel() == "gemm" && !rt::hasEpilogue(op) &&
            !rt::bufferNamed(op, "gelu_pre") &&
            !rt::bufferNamed(op, "dgelu_pre") &&
            !rt::bufferNamed(op, "dbias") &&
            gemmField(op, "c_dtype") != GPTRT_DTYPE_F32_ACCUMULATE &&
            shapeOf(op).contiguous)
          gemms.push_back(op);
      });
      for (rt::KernelOp gemm : gemms) {
        const int64_t operands = gemmField(gemm, "a_dtype");
        const bool bias = bool(rt::bufferNamed(gemm, "bias"));
        if (isFp8(operands) && !bias)
          fuseFp8Bias(gemm);
        else if (operands == GPTRT_DTYPE_BF16 && bias)
          fuseGelu(gemm);
        else if (operands == GPTRT_DTYPE_BF16 && !fuseGeluGrad(gemm))
          fuseBiasGrad(gemm);
      }
    }
  }

private:
  // Makes `buffer` (a result the fused kernel at `gemm` writes in place of
  // `consumer`) defined before `gemm`: its rt.alloc moves up. False when it
  // is defined otherwise after `gemm`, or used between the two.
  static bool canWriteEarly(Value buffer, rt::KernelOp gemm,
                            Operation *consumer) {
    Operation *def = buffer.getDefiningOp();
    if (def && gemm->isBeforeInBlock(def) && !isa<rt::AllocOp>(def))
      return false;
    return !rt::touchedBetween(gemm, consumer, buffer, /*reads=*/true);
  }

  static void defineBefore(Value buffer, rt::KernelOp gemm) {
    Operation *def = buffer.getDefiningOp();
    if (def && gemm->isBeforeInBlock(def))
      def->moveBefore(gemm);
  }

  // A bf16 GEMM with a bias -> y, then gelu_fwd(y) -> g: one GEMM with the
  // GELU epilogue writing y (gelu_pre, kept for the backward) and g (c).
  void fuseGelu(rt::KernelOp gemm) {
    Value pre = gemm.getOutputs()[0];
    auto gelu = dyn_cast_or_null<rt::KernelOp>(rt::nextUser(gemm, pre));
    if (!gelu || gelu.getKernel() != "gelu_fwd" ||
        gelu.getInputs().size() != 1 || gelu.getInputs()[0] != pre ||
        gelu.getOutputs().size() != 1 || rt::hasEpilogue(gelu))
      return;
    const int64_t preDtype = gemmField(gemm, "c_dtype");
    if (rt::constNamed(gelu, "n") != shapeOf(gemm).elements ||
        rt::constNamed(gelu, "x_dtype") != preDtype)
      return;
    Value out = gelu.getOutputs()[0];
    if (!canWriteEarly(out, gemm, gelu))
      return;
    defineBefore(out, gemm);
    gemm.getOutputsMutable()[0].set(out);
    rt::KernelOp fused = rt::withEpilogue(gemm, {{"gelu_pre", pre}}, {});
    rt::setDescriptorFields(fused, "gemm_desc",
                            {{"gelu_pre_dtype", preDtype},
                             {"c_dtype", rt::constNamed(gelu, "out_dtype")}});
    gelu.erase();
    ++fusedGelu;
  }

  // An FP8 GEMM -> d, read only by add(d, bias) -> y with the bias
  // broadcast over d's rows: one GEMM with the bias epilogue writing y; d
  // is gone.
  void fuseFp8Bias(rt::KernelOp gemm) {
    Value d = gemm.getOutputs()[0];
    rt::KernelOp add;
    for (Operation *user : d.getUsers()) {
      if (user == gemm.getOperation())
        continue;
      auto kernel = dyn_cast<rt::KernelOp>(user);
      if (!kernel || add)
        return; // another reader (or a reshape): d is needed as it is
      add = kernel;
    }
    if (!add || add.getKernel() != "add" || add.getInputs().size() != 2 ||
        add.getInputs()[0] != d || add.getOutputs().size() != 1 ||
        rt::hasEpilogue(add) || !gemm->isBeforeInBlock(add))
      return;
    const int64_t n = gemmField(gemm, "n"), dtype = gemmField(gemm, "c_dtype");
    if (rt::constNamed(add, "broadcast_b") != 1 ||
        rt::constNamed(add, "inner") != n ||
        rt::constNamed(add, "outer") * n != shapeOf(gemm).elements ||
        rt::constNamed(add, "a_dtype") != dtype ||
        rt::constNamed(add, "b_dtype") != GPTRT_DTYPE_F32 ||
        rt::constNamed(add, "out_dtype") != dtype)
      return;
    // The bias is read at the GEMM now: it must hold its value there (no
    // write through any view, or into its arena, in between), and be
    // defined there (a param's rt.view, which has no operands, moves up).
    Value bias = add.getInputs()[1];
    Operation *biasDef = bias.getDefiningOp();
    bool moveBias = biasDef && gemm->isBeforeInBlock(biasDef);
    if ((moveBias && !isa<rt::ViewOp>(biasDef)) ||
        rt::touchedBetween(gemm, add, bias, /*reads=*/false))
      return;
    Value y = add.getOutputs()[0];
    if (y == d || !canWriteEarly(y, gemm, add))
      return;
    if (moveBias)
      biasDef->moveBefore(gemm);
    defineBefore(y, gemm);
    gemm.getOutputsMutable()[0].set(y);
    rt::withEpilogue(gemm, {{"bias", bias}}, {});
    add.erase();
    if (Operation *def = d.getDefiningOp(); def && d.use_empty())
      def->erase();
    ++fusedFp8Bias;
  }

  // The weight gradient's GEMM (batch 1, a stored [k, m]: the output
  // gradient) and, after it, reduce_rows of the same buffer (the bias
  // gradient): one GEMM with the bias-gradient epilogue writing both.
  void fuseBiasGrad(rt::KernelOp gemm) {
    if (gemmField(gemm, "batch") != 1 || gemmField(gemm, "trans_a") != 1)
      return;
    const int64_t m = gemmField(gemm, "m"), k = gemmField(gemm, "k");
    Value a = gemm.getInputs()[0], source = rt::rootBuffer(a);
    // Every view of the gradient's buffer (through reshapes), then the
    // first reduce_rows of one after the GEMM.
    SmallVector<Value> views = rt::viewsOf(source);
    rt::KernelOp reduce;
    for (Value view : views)
      for (Operation *user : view.getUsers()) {
        auto kernel = dyn_cast<rt::KernelOp>(user);
        if (kernel && kernel.getKernel() == "reduce_rows" &&
            kernel.getInputs().size() == 1 && kernel.getOutputs().size() == 1 &&
            kernel.getConsts().size() == 4 &&
            rt::constNamed(kernel, "rows") == k &&
            rt::constNamed(kernel, "cols") == m &&
            rt::constNamed(kernel, "x_dtype") == GPTRT_DTYPE_BF16 &&
            gemm->isBeforeInBlock(kernel) &&
            (!reduce || kernel->isBeforeInBlock(reduce)))
          reduce = kernel;
      }
    if (!reduce)
      return;
    // The gradient must not change between the two, and the bias
    // gradient's buffer must be free to be written at the GEMM.
    for (Value view : views)
      for (Operation *user : view.getUsers())
        if (gemm->isBeforeInBlock(user) && user->isBeforeInBlock(reduce) &&
            rt::writes(user, view))
          return;
    Value db = reduce.getOutputs()[0];
    if (!canWriteEarly(db, gemm, reduce))
      return;
    defineBefore(db, gemm);
    rt::KernelOp fused = rt::withEpilogue(gemm, {{"dbias", db}}, {});
    rt::setDescriptorFields(
        fused, "gemm_desc",
        {{"dbias_dtype", rt::constNamed(reduce, "out_dtype")}});
    reduce.erase();
    ++fusedBiasGrad;
  }

  // A bf16 GEMM -> dg, read only by gelu_bwd(dg, pre) -> dx: one GEMM with
  // the GELU-gradient epilogue reading pre (dgelu_pre) and writing dx (c);
  // dg is gone. Returns whether it fused.
  bool fuseGeluGrad(rt::KernelOp gemm) {
    Value dg = gemm.getOutputs()[0];
    rt::KernelOp grad;
    for (Operation *user : dg.getUsers()) {
      if (user == gemm.getOperation())
        continue;
      auto kernel = dyn_cast<rt::KernelOp>(user);
      if (!kernel || grad)
        return false; // another reader (or a reshape): dg is needed as it is
      grad = kernel;
    }
    if (!grad || grad.getKernel() != "gelu_bwd" ||
        grad.getInputs().size() != 2 || grad.getInputs()[0] != dg ||
        grad.getOutputs().size() != 1 || rt::hasEpilogue(grad) ||
        !gemm->isBeforeInBlock(grad))
      return false;
    const int64_t productDtype = gemmField(gemm, "c_dtype");
    if (rt::constNamed(grad, "n") != shapeOf(gemm).elements ||
        rt::constNamed(grad, "dout_dtype") != productDtype)
      return false;
    // The pre-activation is read earlier than gelu_bwd read it: it must
    // already hold its value at the GEMM and keep it until then.
    Value pre = grad.getInputs()[1];
    Operation *preDef = pre.getDefiningOp();
    if (preDef && !preDef->isBeforeInBlock(gemm))
      return false;
    for (Operation *user : pre.getUsers())
      if (gemm->isBeforeInBlock(user) && user->isBeforeInBlock(grad) &&
          rt::writes(user, pre))
        return false;
    Value dx = grad.getOutputs()[0];
    if (!canWriteEarly(dx, gemm, grad))
      return false;
    defineBefore(dx, gemm);
    gemm.getOutputsMutable()[0].set(dx);
    rt::KernelOp fused = rt::withEpilogue(gemm, {{"dgelu_pre", pre}}, {});
    rt::setDescriptorFields(
        fused, "gemm_desc",
        {{"product_dtype", productDtype},
         {"dgelu_pre_dtype", rt::constNamed(grad, "x_dtype")},
         {"c_dtype", rt::constNamed(grad, "dx_dtype")}});
    grad.erase();
    if (Operation *def = dg.getDefiningOp(); def && dg.use_empty())
      def->erase();
    ++fusedGeluGrad;
    return true;
  }
};

} // namespace
