// rt-fuse-amax: an `amax` of a backward kernel's whole output folds into
// the kernel's _amax form, which takes it as it stores the output (see
// Passes.td).
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtKernelQueries.h"

#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_RTFUSEAMAX
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

// A kernel with an _amax form: which output the amax is of, and which
// constant holds that output's dtype.
struct AmaxForm {
  unsigned output;
  unsigned dtypeConst;
  // The _amax form also takes the output's shape as the fused FP8
  // epilogues do (gptrt_kernels.def: out_rows, out_cols, out_dtype).
  bool takesOutputShape = false;
};

std::optional<AmaxForm> amaxForm(StringRef kernel) {
  return llvm::StringSwitch<std::optional<AmaxForm>>(kernel)
      // outs dx, dw, db; consts rows, width, dout, x, dx, dw, db dtypes.
      .Case("layernorm_bwd", AmaxForm{0, 4})
      // outs sum, dw, db; consts the seven above, resid and sum dtypes.
      .Case("layernorm_bwd_add", AmaxForm{0, 8, /*takesOutputShape=*/true})
      .Default(std::nullopt);
}

class RtFuseAmaxPass : public gptc::impl::RtFuseAmaxBase<RtFuseAmaxPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<rt::KernelOp, AmaxForm>> producers;
    getOperation().walk([&](rt::KernelOp op) {
      if (std::optional<AmaxForm> form = amaxForm(op.getKernel()))
        producers.emplace_back(op, *form);
    });
    for (auto [producer, form] : producers) {
      if (form.output >= producer.getOutputs().size() ||
          form.dtypeConst >= producer.getConsts().size())
        continue;
      const int64_t dtype = rt::constAt(producer, form.dtypeConst);
      rt::KernelOp folded = rt::foldFollowingAmax(
          producer, form.output, dtype, (producer.getKernel() + "_amax").str());
      if (!folded)
        continue;
      if (form.takesOutputShape) {
        // The sum is rows x width (constants 0 and 1) of `dtype`.
        SmallVector<Attribute> consts(folded.getConsts().begin(),
                                      folded.getConsts().end());
        consts.append({consts[0], consts[1], folded.getConsts()[form.dtypeConst]});
        folded.setConstsAttr(ArrayAttr::get(&getContext(), consts));
      }
      ++fused;
    }
  }
};

} // namespace
