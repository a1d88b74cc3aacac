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
// amax is of, and which constant holds that output's dtype, by their names
// in the kernel's row.
struct AmaxForm {
  StringRef output;
  StringRef dtypeConst;
};

std::optional<AmaxForm> amaxForm(StringRef kernel) {
  return llvm::StringSwitch<std::optional<AmaxForm>>(kernel)
      .Case("layernorm_bwd", AmaxForm{"dx", "dx_dtype"})
      .Case("layernorm_bwd_add", AmaxForm{"sum", "sum_dtype"})
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
      const int64_t dtype = rt::constNamed(producer, form.dtypeConst);
      if (rt::foldFollowingAmax(producer, form.output, dtype))
        ++fused;
    }
  }
};

} // namespace
