// Small shape helpers shared by the verifiers of the three dialects.
#ifndef GPTC_DIALECTS_COMMON_SHAPECHECKS_H
#define GPTC_DIALECTS_COMMON_SHAPECHECKS_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <string>

namespace gptc {

/// Two sizes can be equal at run time: they match or either is dynamic.
inline bool dimsCompatible(int64_t a, int64_t b) {
  return mlir::ShapedType::isDynamic(a) || mlir::ShapedType::isDynamic(b) ||
         a == b;
}

inline bool shapesCompatible(llvm::ArrayRef<int64_t> a,
                             llvm::ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto pair) {
           return dimsCompatible(std::get<0>(pair), std::get<1>(pair));
         });
}

/// "[?, 1024, 768]": how a shape reads in an error message.
inline std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += mlir::ShapedType::isDynamic(shape[i]) ? std::string("?")
                                                 : std::to_string(shape[i]);
  }
  return out + "]";
}

} // namespace gptc

#endif // GPTC_DIALECTS_COMMON_SHAPECHECKS_H
