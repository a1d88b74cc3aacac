// Result shape of a matrix product over the last two dimensions, shared by
// gpt.matmul and fp8.scaled_matmul so that both accept the same layouts.
#ifndef GPTC_DIALECTS_COMMON_MATMULSHAPE_H
#define GPTC_DIALECTS_COMMON_MATMULSHAPE_H

#include "dialects/common/ShapeChecks.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace gptc {

/// Checks op(a) x op(b) where op swaps the last two dimensions when the
/// transpose flag is set; b is 2-D (broadcast) or has a's rank and batch
/// dimensions. Returns the result shape, or emits an error on `op`.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
verifyMatmulShapes(mlir::Operation *op, llvm::ArrayRef<int64_t> aShape,
                   llvm::ArrayRef<int64_t> bShape, bool transposeA,
                   bool transposeB) {
  int64_t aRank = aShape.size(), bRank = bShape.size();
  if (aRank < 2) {
    op->emitOpError() << "a must have at least 2 dimensions, got "
                      << shapeString(aShape);
    return mlir::failure();
  }
  if (bRank != 2 && bRank != aRank) {
    op->emitOpError() << "b must be 2-D (a weight) or have a's rank " << aRank
                      << ", got " << shapeString(bShape);
    return mlir::failure();
  }
  int64_t m = aShape[aRank - 2], k = aShape[aRank - 1];
  if (transposeA)
    std::swap(m, k);
  int64_t bk = bShape[bRank - 2], n = bShape[bRank - 1];
  if (transposeB)
    std::swap(bk, n);
  if (!dimsCompatible(k, bk)) {
    op->emitOpError() << "contraction sizes differ: a " << shapeString(aShape)
                      << (transposeA ? " (transposed)" : "")
                      << " contracts over " << k << " but b "
                      << shapeString(bShape)
                      << (transposeB ? " (transposed)" : "") << " over " << bk;
    return mlir::failure();
  }
  if (bRank == aRank &&
      !shapesCompatible(aShape.drop_back(2), bShape.drop_back(2))) {
    op->emitOpError() << "batch dimensions of a " << shapeString(aShape)
                      << " and b " << shapeString(bShape) << " differ";
    return mlir::failure();
  }
  llvm::SmallVector<int64_t> result(aShape.drop_back(2));
  result.append({m, n});
  return result;
}

} // namespace gptc

#endif // GPTC_DIALECTS_COMMON_MATMULSHAPE_H
