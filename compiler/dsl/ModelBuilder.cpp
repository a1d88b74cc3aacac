// Implementation of the model-building DSL (see ModelBuilder.h).
#include "compiler/dsl/ModelBuilder.h"

#include "dialects/gpt/GptDialect.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace gptc::dsl {

RankedTensorType Tensor::getType() const {
  return llvm::cast<RankedTensorType>(value.getType());
}

int64_t Tensor::dim(int64_t i) const {
  return i < 0 ? shape()[shape().size() + i] : shape()[i];
}

ModelBuilder::ModelBuilder(MLIRContext &context, StringRef modelName)
    : context(context), builder(&context) {
  context.loadDialect<gpt::GptDialect, func::FuncDialect>();
  module = ModuleOp::create(UnknownLoc::get(&context));
  (*module)->setAttr("gpt.model", builder.getStringAttr(modelName));
  builder.setInsertionPointToEnd(module->getBody());
  forward = func::FuncOp::create(builder, loc("forward"), "forward",
                                 builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(forward.addEntryBlock());
}

ModelBuilder::Scope::~Scope() {
  if (builder)
    builder->scopes.pop_back();
}

ModelBuilder::Scope ModelBuilder::scope(StringRef name) {
  scopes.push_back(name.str());
  return Scope(*this);
}

std::string ModelBuilder::layerName(StringRef leaf) const {
  std::vector<std::string> parts(scopes);
  if (!leaf.empty())
    parts.push_back(leaf.str());
  return llvm::join(parts, ".");
}

void ModelBuilder::setConfig(StringRef key, int64_t value) {
  config.push_back(builder.getNamedAttr(key, builder.getI64IntegerAttr(value)));
}

Location ModelBuilder::loc(StringRef layer) {
  return NameLoc::get(builder.getStringAttr(layer));
}

RankedTensorType ModelBuilder::floatTensor(ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, builder.getF32Type());
}

Tensor ModelBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                           Type elementType) {
  Block &body = forward.getBody().front();
  BlockArgument arg =
      body.addArgument(RankedTensorType::get(shape, elementType), loc(name));
  inputNames.push_back(builder.getStringAttr(name));
  return Tensor(arg);
}

Tensor ModelBuilder::declareParam(StringRef leaf, RankedTensorType type,
                                  std::optional<Init> init, StringRef tiedTo,
                                  std::optional<int64_t> realRows) {
  std::string name = layerName(leaf);
  // The layer of "h.3.attn.qkv.weight" is "h.3.attn.qkv"; "wte" is its own.
  std::string layer = StringRef(name).contains('.')
                          ? StringRef(name).rsplit('.').first.str()
                          : name;
  OpBuilder top(forward);
  gpt::InitAttr initAttr;
  if (init) {
    gpt::InitKind kind = init->kind == Init::Kind::Normal ? gpt::InitKind::Normal
                         : init->kind == Init::Kind::Zeros ? gpt::InitKind::Zeros
                                                          : gpt::InitKind::Ones;
    initAttr = gpt::InitAttr::get(&context, kind, llvm::APFloat(init->std));
  }
  gpt::ParamOp::create(
      top, loc(name), name, type, initAttr,
      tiedTo.empty() ? FlatSymbolRefAttr() : SymbolRefAttr::get(&context, tiedTo),
      layer, realRows ? top.getI64IntegerAttr(*realRows) : IntegerAttr());
  return Tensor(gpt::ParamRefOp::create(builder, loc(name), type, name));
}

Tensor ModelBuilder::param(StringRef leaf, ArrayRef<int64_t> shape, Init init,
                           std::optional<int64_t> realRows) {
  return declareParam(leaf, floatTensor(shape), init, {}, realRows);
}

Tensor ModelBuilder::tiedParam(StringRef leaf, StringRef target) {
  auto targetOp = module->lookupSymbol<gpt::ParamOp>(target);
  assert(targetOp && "tiedParam: declare the target parameter first");
  return declareParam(leaf, targetOp.getTensorType(), std::nullopt, target,
                      std::nullopt);
}

Tensor ModelBuilder::arange(StringRef leaf, int64_t n) {
  std::string layer = layerName(leaf);
  auto type = RankedTensorType::get({n}, builder.getI32Type());
  return Tensor(gpt::ArangeOp::create(builder, loc(layer), type, layer));
}

Tensor ModelBuilder::embedding(StringRef leaf, Tensor table, Tensor ids) {
  std::string layer = layerName(leaf);
  SmallVector<int64_t> shape(ids.shape());
  shape.push_back(table.dim(1));
  return Tensor(gpt::EmbeddingOp::create(builder, loc(layer), floatTensor(shape),
                                         layer, table.getValue(),
                                         ids.getValue()));
}

Tensor ModelBuilder::layerNorm(StringRef leaf, Tensor x, double eps) {
  Scope inner = scope(leaf);
  int64_t width = x.dim(-1);
  Tensor weight = param("weight", {width}, Init::ones());
  Tensor bias = param("bias", {width}, Init::zeros());
  std::string layer = layerName();
  return Tensor(gpt::LayerNormOp::create(
                    builder, loc(layer), x.getType(), /*stats=*/TypeRange(),
                    layer, x.getValue(), weight.getValue(), bias.getValue(),
                    llvm::APFloat(static_cast<float>(eps)))
                    .getNormalized());
}

Tensor ModelBuilder::linear(StringRef leaf, Tensor x, int64_t outFeatures,
                            double std, bool bias) {
  std::optional<Tensor> b;
  Tensor w;
  {
    Scope inner = scope(leaf);
    w = param("weight", {outFeatures, x.dim(-1)}, Init::normal(std));
    if (bias)
      b = param("bias", {outFeatures}, Init::zeros());
  }
  return matmul(leaf, x, w, /*transposeB=*/true, b);
}

Tensor ModelBuilder::matmul(StringRef leaf, Tensor a, Tensor b,
                            bool transposeB, std::optional<Tensor> bias) {
  std::string layer = layerName(leaf);
  SmallVector<int64_t> shape(a.shape());
  shape.back() = transposeB ? b.dim(-2) : b.dim(-1);
  return Tensor(gpt::MatmulOp::create(
      builder, loc(layer), floatTensor(shape), layer, a.getValue(), b.getValue(),
      bias ? bias->getValue() : Value(), /*transpose_a=*/false, transposeB));
}

Tensor ModelBuilder::add(StringRef leaf, Tensor lhs, Tensor rhs) {
  std::string layer = layerName(leaf);
  return Tensor(gpt::AddOp::create(builder, loc(layer), lhs.getType(), layer,
                                   lhs.getValue(), rhs.getValue()));
}

Tensor ModelBuilder::gelu(Tensor x) {
  std::string layer = layerName();
  return Tensor(gpt::GeluOp::create(builder, loc(layer), x.getType(), layer,
                                    x.getValue()));
}

std::vector<Tensor> ModelBuilder::split(Tensor x, int64_t axis, int64_t parts) {
  std::string layer = layerName();
  SmallVector<int64_t> shape(x.shape());
  shape[axis] /= parts;
  SmallVector<Type> types(parts, floatTensor(shape));
  auto op = gpt::SplitOp::create(builder, loc(layer), types, layer,
                                 x.getValue(), axis);
  std::vector<Tensor> results;
  for (Value v : op.getResults())
    results.emplace_back(v);
  return results;
}

Tensor ModelBuilder::causalSelfAttention(Tensor q, Tensor k, Tensor v,
                                         int64_t heads) {
  std::string layer = layerName();
  return Tensor(gpt::AttentionOp::create(builder, loc(layer), q.getType(),
                                         /*lse=*/TypeRange(), layer,
                                         q.getValue(), k.getValue(),
                                         v.getValue(), heads, /*causal=*/true)
                    .getAttended());
}

Tensor ModelBuilder::crossEntropy(StringRef leaf, Tensor logits, Tensor targets,
                                  int64_t vocabSize) {
  std::string layer = layerName(leaf);
  return Tensor(gpt::CrossEntropyOp::create(
                    builder, loc(layer),
                    RankedTensorType::get({}, builder.getF32Type()),
                    /*lse=*/TypeRange(), layer, logits.getValue(),
                    targets.getValue(), vocabSize, /*ignore_index=*/-1)
                    .getLoss());
}

llvm::Expected<OwningOpRef<ModuleOp>>
ModelBuilder::finish(ArrayRef<NamedOutput> outputs) {
  SmallVector<Value> values;
  for (const NamedOutput &output : outputs)
    values.push_back(output.value.getValue());
  func::ReturnOp::create(builder, loc("forward"), values);
  forward.setFunctionType(builder.getFunctionType(
      forward.getBody().front().getArgumentTypes(), ValueRange(values).getTypes()));
  for (auto [i, name] : llvm::enumerate(inputNames))
    forward.setArgAttr(i, "gpt.input", name);
  for (auto [i, output] : llvm::enumerate(outputs))
    forward.setResultAttr(i, "gpt.output", builder.getStringAttr(output.name));
  (*module)->setAttr("gpt.config", builder.getDictionaryAttr(config));
  if (failed(verify(*module)))
    return llvm::createStringError(
        "the model built with the DSL does not verify; the diagnostics above "
        "name the op");
  return std::move(module);
}

} // namespace gptc::dsl
