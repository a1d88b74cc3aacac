// The model summary behind `gptc --report` (see ModelSummary.h).
#include "compiler/driver/ModelSummary.h"

#include "dialects/gpt/GptDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace gptc {

std::string withThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

namespace {

class SummaryBuilder {
public:
  LayerSummary &layer(StringRef name) {
    auto [it, inserted] = index.try_emplace(name, summary.layers.size());
    if (inserted)
      summary.layers.push_back(LayerSummary{name.str(), {}, 0, 0});
    return summary.layers[it->second];
  }
  ModelSummary summary;

private:
  llvm::StringMap<size_t> index;
};

} // namespace

FailureOr<ModelSummary> summarizeModel(ModuleOp module) {
  SummaryBuilder b;
  ModelSummary &s = b.summary;
  if (auto name = module->getAttrOfType<StringAttr>("gpt.model"))
    s.model = name.str();
  if (auto config = module->getAttrOfType<DictionaryAttr>("gpt.config"))
    for (NamedAttribute entry : config)
      if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
        s.config.emplace_back(entry.getName().str(), value.getInt());

  // Layers are listed in program order: a parameter's layer first appears
  // where the graph reads it.
  auto params = module.getOps<gpt::ParamOp>();
  if (params.empty()) {
    module.emitError("is not a gpt model: it declares no gpt.param; generate "
                     "one with `gpt-model --preset gpt2-tiny -o FILE.mlir`");
    return failure();
  }
  SymbolTable symbols(module);
  module.walk([&](Operation *op) {
    if (auto ref = dyn_cast<gpt::ParamRefOp>(op)) {
      b.layer(symbols.lookup<gpt::ParamOp>(ref.getParam()).getLayer());
      return;
    }
    if (!isa<gpt::GptDialect>(op->getDialect()) || isa<gpt::ParamOp>(op))
      return;
    auto layerAttr = op->getAttrOfType<StringAttr>("layer");
    if (!layerAttr)
      return;
    LayerSummary &layer = b.layer(layerAttr.getValue());
    layer.ops.push_back(op->getName().stripDialect().str());
    if (auto matmul = dyn_cast<gpt::MatmulOp>(op)) {
      if (matmul.getB().getDefiningOp<gpt::ParamRefOp>()) {
        int64_t weights =
            cast<RankedTensorType>(matmul.getB().getType()).getNumElements();
        s.matmulWeights += weights;
        layer.flopsPerToken += 6 * weights;
      }
    } else if (auto attention = dyn_cast<gpt::AttentionOp>(op)) {
      ArrayRef<int64_t> shape = attention.getAttended().getType().getShape();
      int64_t flops = 12 * shape[2] * shape[1];
      s.attentionFlopsPerToken += flops;
      layer.flopsPerToken += flops;
    }
  });

  for (gpt::ParamOp param : params) {
    LayerSummary &layer = b.layer(param.getLayer());
    if (std::optional<StringRef> target = param.getTiedTo()) {
      s.ties.emplace_back(param.getSymName().str(), target->str());
      continue;
    }
    int64_t elements = param.getTensorType().getNumElements();
    layer.params += elements;
    s.params += elements;
    s.realParams += param.getNumRealElements();
  }
  return s;
}

namespace {

/// "param, matmul x2": the layer's op kinds in order, repeats counted.
std::string describeOps(const std::vector<std::string> &ops) {
  std::vector<std::pair<std::string, int>> counted;
  for (const std::string &op : ops) {
    auto it = llvm::find_if(counted, [&](auto &p) { return p.first == op; });
    if (it == counted.end())
      counted.emplace_back(op, 1);
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (auto &[op, n] : counted)
    parts.push_back(n > 1 ? op + " x" + std::to_string(n) : op);
  return llvm::join(parts, ", ");
}

} // namespace

void printReport(const ModelSummary &s, llvm::raw_ostream &os) {
  os << "model " << (s.model.empty() ? "(unnamed)" : s.model) << "\n";
  if (!s.config.empty()) {
    os << "config:";
    for (auto &[key, value] : s.config)
      os << " " << key << "=" << value;
    os << "\n";
  }
  os << "\n"
     << llvm::left_justify("layer", 23) << llvm::left_justify("ops", 29)
     << llvm::right_justify("parameters", 14)
     << llvm::right_justify("FLOPs/token", 16) << "\n";
  for (const LayerSummary &layer : s.layers)
    os << llvm::left_justify(layer.name, 22) << " "
       << llvm::left_justify(describeOps(layer.ops), 29)
       << llvm::right_justify(withThousands(layer.params), 14)
       << llvm::right_justify(withThousands(layer.flopsPerToken), 16) << "\n";
  os << "\nparameters: " << withThousands(s.params);
  if (s.realParams != s.params)
    os << " (" << withThousands(s.realParams)
       << " without the padding rows of padded tables)";
  os << "\n";
  for (auto &[param, target] : s.ties)
    os << "tied: " << param << " shares " << target << "\n";
  os << "FLOPs per token (training): " << withThousands(s.flopsPerToken())
     << " = 6 x " << withThousands(s.matmulWeights)
     << " matmul weights + " << withThousands(s.attentionFlopsPerToken)
     << " attention\n";
}

} // namespace gptc
