// An attribute parameter holding a double (as an APFloat, which LLVM knows
// how to hash), printed in the shortest decimal form that reads back to the
// same value: 0.02, not 2.000000e-02 : f64.
#ifndef GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_TD
#define GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_TD

include "mlir/IR/AttrTypeBase.td"

class Gptc_DoubleParameter<string desc, string default = "">
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = "::gptc::parseShortestDouble($_parser)";
  let printer = "::gptc::printShortestDouble($_printer, $_self)";
  let defaultValue = !if(!empty(default), "", "::llvm::APFloat(" # default # ")");
}

#endif // GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_TD
