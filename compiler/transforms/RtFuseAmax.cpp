// rt-fuse-amax: an `amax` of a backward kernel's whole output folds into
// the kernel's output epilogue, which takes it as it stores the output
// (see Passes.td).
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

// A backward kernel whose epilogue can take an amax: which output the
// amax is of, and which constant holds that output's dtype.
struct AmaxForm {
  unsigned output;
  unsigned dtypeConst;
};

std::optional<AmaxForm> amaxForm(StringRef kernel) {
  return llvm::StringSwitch<std::optional<AmaxForm>>(kernel)
      // outs dx, dw, db; consts rows, width, dout, x, dx, dw, db dtypes.
      .Case("layernorm_bwd", AmaxForm{0, 4})
      // outs sum, dw, db; consts the seven above, resid and sum dtypes.
      .Case("layernorm_bwd_add", AmaxForm{0, 8})
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
      if (rt::foldFollowingAmax(producer, form.output, dtype))
        ++fused;
    }
  }
};

} // namespace
