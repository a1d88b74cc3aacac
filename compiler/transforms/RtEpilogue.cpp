// Finding and setting a producer kernel's epilogue buffers and fields by
// their names in the kernel table (see RtEpilogue.h).
#include "compiler/transforms/RtEpilogue.h"

#include "dialects/rt/KernelTable.h"

#include "llvm/ADT/SetVector.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace gptc::rt {
namespace {

const KernelParam *epilogueParam(const KernelSignature &row) {
  for (const KernelParam &param : row.constants())
    if (param.kind == KernelParamKind::Descriptor &&
        param.descriptor->name == "epilogue")
      return &param;
  return nullptr;
}

bool isEmpty(Value v) { return !v || v.getDefiningOp<NullOp>(); }

// The element type an rt.null stands in for, so the IR reads naturally.
Type nullElement(MLIRContext *context, KernelElement element) {
  switch (element) {
  case KernelElement::Bf16:
    return BFloat16Type::get(context);
  case KernelElement::Fp8:
    return Float8E4M3FNType::get(context);
  case KernelElement::I32:
    return IntegerType::get(context, 32);
  default:
    return Float32Type::get(context);
  }
}

// The row's buffers of one group (ins or outs): empty slots before the last
// set one become rt.null, those after it are left out.
SmallVector<Value> finalBuffers(OpBuilder &b, Location loc,
                                ArrayRef<Value> slots,
                                ArrayRef<KernelParam> params) {
  size_t end = slots.size();
  while (end > 0 && isEmpty(slots[end - 1]) && params[end - 1].optional)
    --end;
  SmallVector<Value> values;
  for (size_t i = 0; i < end; ++i) {
    if (!isEmpty(slots[i])) {
      values.push_back(slots[i]);
      continue;
    }
    values.push_back(NullOp::create(
        b, loc,
        MemRefType::get({0}, nullElement(b.getContext(), params[i].element))));
  }
  return values;
}

const char *const kEpilogueBuffers[] = {"scale", "amax", "q", "q_t", "db"};

} // namespace

Value bufferNamed(KernelOp op, StringRef name) {
  const KernelSignature *row = lookupKernel(op.getKernel());
  if (!row)
    return {};
  Value found;
  if (std::optional<unsigned> i = row->inputIndex(name);
      i && *i < op.getInputs().size())
    found = op.getInputs()[*i];
  else if (std::optional<unsigned> o = row->outputIndex(name);
           o && *o < op.getOutputs().size())
    found = op.getOutputs()[*o];
  return isEmpty(found) ? Value() : found;
}

bool takesEpilogue(KernelOp op) {
  const KernelSignature *row = lookupKernel(op.getKernel());
  return row && epilogueParam(*row);
}

bool hasEpilogue(KernelOp op) {
  const KernelSignature *row = lookupKernel(op.getKernel());
  return row && epilogueParam(*row) &&
         op.getConsts().size() == row->constants().size();
}

std::optional<int64_t> epilogueField(KernelOp op, StringRef name) {
  return descriptorField(op, "epilogue", name);
}

KernelOp createWithEpilogue(OpBuilder &b, Location loc, StringRef kernel,
                            ValueRange ins, ValueRange outs,
                            ArrayRef<Attribute> base,
                            ArrayRef<NamedBuffer> buffers,
                            ArrayRef<NamedField> fields) {
  const KernelSignature *row = lookupKernel(kernel);
  assert(row && epilogueParam(*row) && "a kernel taking an epilogue");
  SmallVector<Value> inSlots(row->inputs().size()),
      outSlots(row->outputs().size());
  llvm::copy(ins.take_front(inSlots.size()), inSlots.begin());
  llvm::copy(outs.take_front(outSlots.size()), outSlots.begin());
  bool epilogue = !fields.empty();
  for (auto [name, value] : buffers) {
    if (std::optional<unsigned> i = row->inputIndex(name))
      inSlots[*i] = value;
    else if (std::optional<unsigned> o = row->outputIndex(name))
      outSlots[*o] = value;
    else
      llvm_unreachable("a buffer the kernel's row does not have");
  }
  for (const char *name : kEpilogueBuffers) {
    std::optional<unsigned> i = row->inputIndex(name);
    std::optional<unsigned> o = row->outputIndex(name);
    epilogue |= (i && row->inputs()[*i].optional && !isEmpty(inSlots[*i])) ||
                (o && row->outputs()[*o].optional && !isEmpty(outSlots[*o]));
  }
  SmallVector<Attribute> consts(base);
  if (epilogue) {
    SmallVector<NamedAttribute> dictionary;
    for (auto [name, value] : fields)
      dictionary.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
    consts.push_back(b.getDictionaryAttr(dictionary));
  }
  SmallVector<Value> finalIns = finalBuffers(b, loc, inSlots, row->inputs());
  SmallVector<Value> finalOuts =
      finalBuffers(b, loc, outSlots, row->outputs());
  return KernelOp::create(b, loc, kernel, finalIns, finalOuts, /*stream=*/0,
                          b.getArrayAttr(consts));
}

std::pair<SmallVector<NamedBuffer>, SmallVector<NamedField>>
epilogueOf(KernelOp op) {
  std::pair<SmallVector<NamedBuffer>, SmallVector<NamedField>> result;
  const KernelSignature *row = lookupKernel(op.getKernel());
  for (const char *name : kEpilogueBuffers) {
    std::optional<unsigned> i = row->inputIndex(name);
    std::optional<unsigned> o = row->outputIndex(name);
    bool optional = (i && row->inputs()[*i].optional) ||
                    (o && row->outputs()[*o].optional);
    if (Value v = bufferNamed(op, name); v && optional)
      result.first.push_back({name, v});
  }
  if (hasEpilogue(op))
    for (NamedAttribute field :
         cast<DictionaryAttr>(op.getConsts().getValue().back()))
      result.second.push_back({field.getName().getValue(),
                               cast<IntegerAttr>(field.getValue()).getInt()});
  return result;
}

namespace {
// The position of `op`'s descriptor constant `descriptor`, when it passes
// one.
std::optional<unsigned> descriptorIndex(KernelOp op, StringRef descriptor) {
  const KernelSignature *row = lookupKernel(op.getKernel());
  if (!row)
    return std::nullopt;
  std::optional<unsigned> index = row->constantIndex(descriptor);
  if (!index || *index >= op.getConsts().size() ||
      !isa<DictionaryAttr>(op.getConsts()[*index]))
    return std::nullopt;
  return index;
}
} // namespace

DictionaryAttr descriptorAttr(MLIRContext *context, StringRef kernel,
                              StringRef descriptor,
                              ArrayRef<NamedField> fields) {
  const KernelSignature *row = lookupKernel(kernel);
  std::optional<unsigned> index =
      row ? row->constantIndex(descriptor) : std::nullopt;
  assert(index && row->constants()[*index].descriptor &&
         "a descriptor parameter of the kernel's row");
  const KernelDescriptor &table = *row->constants()[*index].descriptor;
  Builder b(context);
  SmallVector<NamedAttribute> entries;
  for (auto [name, value] : fields) {
    const KernelField *field = table.field(name);
    assert(field && "a field of the descriptor");
    if (field->defaultValue != value)
      entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
  }
  return b.getDictionaryAttr(entries);
}

std::optional<int64_t> descriptorField(KernelOp op, StringRef descriptor,
                                       StringRef name) {
  std::optional<unsigned> index = descriptorIndex(op, descriptor);
  if (!index)
    return std::nullopt;
  auto fields = cast<DictionaryAttr>(op.getConsts()[*index]);
  if (auto value = fields.getAs<IntegerAttr>(name))
    return value.getInt();
  const KernelParam &param = lookupKernel(op.getKernel())->constants()[*index];
  if (const KernelField *field = param.descriptor->field(name))
    return field->defaultValue;
  return std::nullopt;
}

void setDescriptorFields(KernelOp op, StringRef descriptor,
                         ArrayRef<NamedField> fields) {
  std::optional<unsigned> index = descriptorIndex(op, descriptor);
  assert(index && "a call passing that descriptor");
  NamedAttrList entries(cast<DictionaryAttr>(op.getConsts()[*index]));
  Builder b(op.getContext());
  for (auto [name, value] : fields)
    entries.set(name, b.getI64IntegerAttr(value));
  SmallVector<Attribute> consts(op.getConsts().getValue());
  consts[*index] = entries.getDictionary(op.getContext());
  op.setConstsAttr(b.getArrayAttr(consts));
}

KernelOp withEpilogue(KernelOp op, ArrayRef<NamedBuffer> buffers,
                      ArrayRef<NamedField> fields) {
  ArrayRef<Attribute> consts = op.getConsts().getValue();
  SmallVector<NamedField> merged;
  if (hasEpilogue(op)) {
    for (NamedAttribute field : cast<DictionaryAttr>(consts.back()))
      merged.push_back({field.getName().getValue(),
                        cast<IntegerAttr>(field.getValue()).getInt()});
    consts = consts.drop_back();
  }
  for (NamedField field : fields) {
    auto it = llvm::find_if(
        merged, [&](const NamedField &f) { return f.first == field.first; });
    if (it != merged.end())
      it->second = field.second;
    else
      merged.push_back(field);
  }
  OpBuilder b(op);
  llvm::SmallSetVector<Operation *, 2> oldNulls;
  for (Value v : op->getOperands())
    if (auto null = v.getDefiningOp<NullOp>())
      oldNulls.insert(null);
  KernelOp rebuilt =
      createWithEpilogue(b, op.getLoc(), op.getKernel(), op.getInputs(),
                         op.getOutputs(), consts, buffers, merged);
  for (NamedAttribute attr : op->getDiscardableAttrs())
    rebuilt->setAttr(attr.getName(), attr.getValue());
  rebuilt.setStream(op.getStream());
  op.erase();
  for (Operation *null : oldNulls)
    if (null->use_empty())
      null->erase();
  return rebuilt;
}

} // namespace gptc::rt
