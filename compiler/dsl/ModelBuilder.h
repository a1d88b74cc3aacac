// The model-building DSL: a small C++ API that emits the gpt dialect, so a
// model reads like the model it is (see models/gpt2.cpp).
//
// Parameters become module-level gpt.param symbols; the forward graph is one
// function, @forward. Layer names come from a stack of scopes: inside
// scope("h.3") and scope("attn"), linear("qkv", ...) creates the parameters
// h.3.attn.qkv.weight / .bias and a matmul whose layer is "h.3.attn.qkv".
#ifndef GPTC_COMPILER_DSL_MODELBUILDER_H
#define GPTC_COMPILER_DSL_MODELBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace gptc::dsl {

/// A value of the graph being built.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(mlir::Value value) : value(value) {}
  mlir::Value getValue() const { return value; }
  mlir::RankedTensorType getType() const;
  llvm::ArrayRef<int64_t> shape() const { return getType().getShape(); }
  int64_t dim(int64_t i) const;

private:
  mlir::Value value;
};

/// A result of @forward and its role ("loss", "logits"), which later phases
/// find through the gpt.output result attribute.
struct NamedOutput {
  llvm::StringRef name;
  Tensor value;
};

/// How a parameter starts: normal(std), zeros or ones.
struct Init {
  static Init normal(double std) { return {Kind::Normal, std}; }
  static Init zeros() { return {Kind::Zeros, 0.0}; }
  static Init ones() { return {Kind::Ones, 0.0}; }
  enum class Kind { Normal, Zeros, Ones } kind;
  double std;
};

class ModelBuilder {
public:
  /// Starts a module named `modelName` with an empty @forward function.
  ModelBuilder(mlir::MLIRContext &context, llvm::StringRef modelName);

  /// Pushes a layer-name component for as long as the returned object lives.
  class [[nodiscard]] Scope {
  public:
    explicit Scope(ModelBuilder &builder) : builder(&builder) {}
    Scope(Scope &&other) : builder(other.builder) { other.builder = nullptr; }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;
    ~Scope();

  private:
    ModelBuilder *builder;
  };
  Scope scope(llvm::StringRef name);
  /// The current scope joined with `leaf` by dots ("h.3.attn" + "qkv").
  std::string layerName(llvm::StringRef leaf = {}) const;

  /// Records a model-level setting in the module's `gpt.config` dictionary.
  void setConfig(llvm::StringRef key, int64_t value);

  /// A new argument of @forward (token ids, targets).
  Tensor input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               mlir::Type elementType);

  /// A new trainable parameter `<scope>.<leaf>`; rows at and past `realRows`
  /// are padding.
  Tensor param(llvm::StringRef leaf, llvm::ArrayRef<int64_t> shape, Init init,
               std::optional<int64_t> realRows = std::nullopt);
  /// A parameter `<scope>.<leaf>` that shares the storage of `target`.
  Tensor tiedParam(llvm::StringRef leaf, llvm::StringRef target);

  // Ops. Each takes the layer name from the current scope, plus `leaf` where
  // the op is a named sub-layer of it.
  Tensor arange(llvm::StringRef leaf, int64_t n);
  Tensor embedding(llvm::StringRef leaf, Tensor table, Tensor ids);
  /// Layer norm with its own weight (ones) and bias (zeros) parameters.
  Tensor layerNorm(llvm::StringRef leaf, Tensor x, double eps = 1e-5);
  /// x W^T + b with W [out, in] ~ normal(std) and b zeros.
  Tensor linear(llvm::StringRef leaf, Tensor x, int64_t outFeatures,
                double std, bool bias = true);
  Tensor matmul(llvm::StringRef leaf, Tensor a, Tensor b, bool transposeB,
                std::optional<Tensor> bias = std::nullopt);
  Tensor add(llvm::StringRef leaf, Tensor lhs, Tensor rhs);
  Tensor gelu(Tensor x);
  std::vector<Tensor> split(Tensor x, int64_t axis, int64_t parts);
  Tensor causalSelfAttention(Tensor q, Tensor k, Tensor v, int64_t heads);
  Tensor crossEntropy(llvm::StringRef leaf, Tensor logits, Tensor targets,
                      int64_t vocabSize);

  /// Ends @forward returning `outputs` and verifies the module.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  finish(llvm::ArrayRef<NamedOutput> outputs);

private:
  mlir::Location loc(llvm::StringRef layer);
  mlir::RankedTensorType floatTensor(llvm::ArrayRef<int64_t> shape);
  Tensor declareParam(llvm::StringRef leaf, mlir::RankedTensorType type,
                      std::optional<Init> init, llvm::StringRef tiedTo,
                      std::optional<int64_t> realRows);

  mlir::MLIRContext &context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp forward;
  mlir::OpBuilder builder;
  std::vector<std::string> scopes;
  llvm::SmallVector<mlir::StringAttr> inputNames;
  llvm::SmallVector<mlir::NamedAttribute> config;
};

} // namespace gptc::dsl

#endif // GPTC_COMPILER_DSL_MODELBUILDER_H
