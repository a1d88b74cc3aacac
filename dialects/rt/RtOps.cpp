// Verifiers of the rt dialect's ops.
#include "dialects/common/ShapeChecks.h"
#include "dialects/rt/KernelTable.h"
#include "dialects/rt/RtDialect.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace gptc;
using namespace gptc::rt;

namespace {

int64_t bufferBytes(MemRefType type) {
  return type.getNumElements() *
         static_cast<int64_t>(
             llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

LogicalResult verifyStream(Operation *op, int32_t stream) {
  if (stream < 0)
    return op->emitOpError() << "stream must be >= 0 (0 is compute), got "
                             << stream;
  return success();
}

/// Collectives move whole buffers of one element type between ranks.
LogicalResult verifyCollective(Operation *op, MemRefType input,
                               MemRefType output, int32_t stream) {
  if (input.getElementType() != output.getElementType())
    return op->emitOpError() << "input element type " << input.getElementType()
                             << " differs from output element type "
                             << output.getElementType();
  return verifyStream(op, stream);
}

/// Whether a buffer of element type `type` may be passed where the kernel
/// table's row says `element`.
bool elementMatches(KernelElement element, Type type) {
  switch (element) {
  case KernelElement::Any:
    return true;
  case KernelElement::F32:
    return type.isF32();
  case KernelElement::Bf16:
    return type.isBF16();
  case KernelElement::Fp8:
    return isa<Float8E4M3FNType, Float8E5M2Type>(type);
  case KernelElement::I32:
    return type.isSignlessInteger(32);
  case KernelElement::None:
    break;
  }
  return false;
}

/// The names of `params`, comma-separated, for a diagnostic.
std::string namesOf(ArrayRef<KernelParam> params) {
  std::string names;
  for (const KernelParam &param : params)
    names += (names.empty() ? "" : ", ") + std::string(param.name);
  return names.empty() ? "none" : names;
}

/// Whether `buffer` is an optional buffer left empty (rt.null).
bool isNull(Value buffer) { return buffer && buffer.getDefiningOp<NullOp>(); }

/// How many of `params` a call must pass: all but the optional ones at the
/// end, which it may leave out.
size_t requiredPrefix(ArrayRef<KernelParam> params) {
  size_t required = params.size();
  while (required > 0 && params[required - 1].optional)
    --required;
  return required;
}

/// Checks `buffers` (the call's ins or outs) against the row's `params`.
LogicalResult verifyBuffers(KernelOp op, StringRef role, ValueRange buffers,
                            ArrayRef<KernelParam> params) {
  StringRef name = op.getKernel();
  const size_t required = requiredPrefix(params);
  if (buffers.size() < required || buffers.size() > params.size()) {
    InFlightDiagnostic diag = op.emitOpError();
    diag << "kernel \"" << name << "\" takes ";
    if (required != params.size())
      diag << required << " to ";
    diag << params.size() << " " << role << " buffer"
         << (params.size() == 1 ? "" : "s") << " (" << namesOf(params);
    if (required != params.size())
      diag << "; those after the first " << required << " are optional";
    diag << "), got " << buffers.size()
         << "; the kernel table runtime/abi/gptrt_kernels.def is the "
            "reference";
    return diag;
  }
  for (auto [index, buffer, param] : llvm::enumerate(buffers, params)) {
    if (isNull(buffer)) {
      if (!param.optional)
        return op.emitOpError()
               << role << " " << index << " ('" << param.name
               << "') of kernel \"" << name
               << "\" is required, got rt.null; only the table's optional "
                  "buffers (GPTRT_IN_OPT, GPTRT_OUT_OPT) may be left empty";
      continue;
    }
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!type)
      return op.emitOpError() << role << " " << index << " ('" << param.name
                              << "') of kernel \"" << name
                              << "\" must be a buffer (memref), got "
                              << buffer.getType();
    if (!elementMatches(param.element, type.getElementType()))
      return op.emitOpError()
             << role << " " << index << " ('" << param.name << "') of kernel \""
             << name << "\" holds " << describeElement(param.element)
             << ", got " << type;
  }
  return success();
}

/// The element type a dtype constant (GPTRT_DTYPE_*) or an FP8 format
/// constant (GPTRT_FP8_*) names, or null for a value that is neither.
Type elementOfConstant(MLIRContext *context, bool format, int64_t value) {
  if (format)
    return value == 0   ? Type(Float8E4M3FNType::get(context))
           : value == 1 ? Type(Float8E5M2Type::get(context))
                        : Type();
  // 257: f32, accumulated into (GPTRT_DTYPE_F32_ACCUMULATE); 4 and 5: FP8
  // codes, the manifest's DType numbers (GPTRT_DTYPE_E4M3, _E5M2).
  switch (value) {
  case 1:
  case 257:
    return Float32Type::get(context);
  case 2:
    return BFloat16Type::get(context);
  case 4:
    return Float8E4M3FNType::get(context);
  case 5:
    return Float8E5M2Type::get(context);
  default:
    return Type();
  }
}

/// The constants that say what a buffer holds agree with the buffer's
/// element type: `<b>_dtype` with buffer <b> (f32 1 or 257, bf16 2),
/// `dtype` with every `void` buffer that has no dtype of its own,
/// `format_<b>` with FP8 buffer <b> and `format` with the FP8 buffer `q`
/// (E4M3 0, E5M2 1). Calls that disagree would have the runtime read the
/// bytes as another type.
LogicalResult verifyTypeConstants(KernelOp op, const KernelSignature &row) {
  // The call's buffers with their rows, ins then outs (diagnostics name
  // the first that disagrees, in call order).
  SmallVector<std::pair<Value, const KernelParam *>> buffers;
  for (auto [value, param] : llvm::zip(op.getInputs(), row.inputs()))
    if (!isNull(value))
      buffers.push_back({value, &param});
  for (auto [value, param] : llvm::zip(op.getOutputs(), row.outputs()))
    if (!isNull(value))
      buffers.push_back({value, &param});
  auto bufferNamed =
      [&](StringRef name) -> std::pair<Value, const KernelParam *> {
    for (auto entry : buffers)
      if (name == entry.second->name)
        return entry;
    return {};
  };
  ArrayRef<KernelParam> constants = row.constants();
  // `what` names the constant in a diagnostic: "constant 3 ('x_dtype')".
  auto checkValue = [&](const Twine &what, int64_t value, bool format,
                        std::pair<Value, const KernelParam *> buffer)
      -> LogicalResult {
    Type expected = elementOfConstant(op.getContext(), format, value);
    if (!expected)
      return op.emitOpError()
             << what << " of kernel \"" << op.getKernel() << "\" is " << value
             << ", expected "
             << (format ? "an FP8 format: 0 (E4M3) or 1 (E5M2)"
                        : "a dtype: 1 (f32), 2 (bf16), 4 (E4M3), 5 "
                          "(E5M2) or 257 (f32, accumulated)");
    Type type = buffer.first.getType();
    if (cast<MemRefType>(type).getElementType() != expected)
      return op.emitOpError()
             << what << " of kernel \"" << op.getKernel() << "\" says "
             << buffer.second->name << " holds " << expected << ", but it is "
             << type;
    return success();
  };
  auto check = [&](size_t index, bool format,
                   std::pair<Value, const KernelParam *> buffer)
      -> LogicalResult {
    return checkValue("constant " + Twine(index) + " ('" +
                          constants[index].name + "')",
                      cast<IntegerAttr>(op.getConsts()[index]).getInt(),
                      format, buffer);
  };
  // A descriptor's `format` and `<b>_dtype` fields follow the same rules
  // (the epilogue's `format` describes q, its `db_dtype` db).
  for (auto [index, param] : llvm::enumerate(constants)) {
    if (param.kind != KernelParamKind::Descriptor ||
        index >= op.getConsts().size())
      continue;
    for (NamedAttribute field : cast<DictionaryAttr>(op.getConsts()[index])) {
      StringRef fieldName = field.getName().getValue();
      StringRef bufferName = fieldName;
      bool format = fieldName == "format";
      if (!format && !bufferName.consume_back("_dtype"))
        continue;
      auto buffer = bufferNamed(format ? "q" : bufferName);
      if (!buffer.second ||
          buffer.second->element !=
              (format ? KernelElement::Fp8 : KernelElement::Any))
        continue;
      if (failed(checkValue("field '" + fieldName + "' of constant " +
                                Twine(index) + " ('" + param.name + "')",
                            cast<IntegerAttr>(field.getValue()).getInt(),
                            format, buffer)))
        return failure();
    }
  }
  for (auto [index, param] : llvm::enumerate(constants)) {
    if (param.kind != KernelParamKind::I64)
      continue;
    StringRef constant = param.name;
    if (constant == "dtype") {
      for (auto buffer : buffers)
        if (buffer.second->element == KernelElement::Any &&
            !row.constantIndex((Twine(buffer.second->name) + "_dtype").str()) &&
            failed(check(index, /*format=*/false, buffer)))
          return failure();
      continue;
    }
    if (constant.consume_front("format")) {
      if (!constant.empty() && !constant.consume_front("_"))
        continue;
      auto buffer = bufferNamed(constant.empty() ? "q" : constant);
      if (buffer.second && buffer.second->element == KernelElement::Fp8 &&
          failed(check(index, /*format=*/true, buffer)))
        return failure();
      continue;
    }
    if (constant.consume_back("_dtype")) {
      auto buffer = bufferNamed(constant);
      if (buffer.second && buffer.second->element == KernelElement::Any &&
          failed(check(index, /*format=*/false, buffer)))
        return failure();
    }
  }
  return success();
}

/// A descriptor constant is a dictionary of the descriptor's fields, each
/// an i64 (rt-to-llvm stores it as the C struct, absent fields defaulted).
LogicalResult verifyDescriptor(KernelOp op, size_t index,
                               const KernelParam &param, Attribute c) {
  const KernelDescriptor &descriptor = *param.descriptor;
  auto fieldList = [&] {
    std::string names;
    for (const KernelField &field : descriptor.fields)
      names += (names.empty() ? "" : ", ") + std::string(field.name);
    return names;
  };
  auto dictionary = dyn_cast<DictionaryAttr>(c);
  if (!dictionary)
    return op.emitOpError()
           << "constant " << index << " ('" << param.name << "') of kernel \""
           << op.getKernel() << "\" must be a dictionary of gptrt_"
           << descriptor.name << "'s fields (" << fieldList() << "), got "
           << c;
  for (NamedAttribute field : dictionary) {
    if (!descriptor.field(field.getName().getValue()))
      return op.emitOpError()
             << "constant " << index << " ('" << param.name
             << "') of kernel \"" << op.getKernel() << "\" sets '"
             << field.getName().getValue() << "', which gptrt_"
             << descriptor.name << " does not have; its fields: "
             << fieldList();
    auto integer = dyn_cast<IntegerAttr>(field.getValue());
    if (!integer || !integer.getType().isSignlessInteger(64))
      return op.emitOpError()
             << "field '" << field.getName().getValue() << "' of constant "
             << index << " ('" << param.name << "') of kernel \""
             << op.getKernel() << "\" must be an i64, got "
             << field.getValue();
  }
  return success();
}

/// The output epilogue's buffers say what it does (gptrt_kernels.def):
/// amax with the descriptor, scale with q, q_t only with q, db only with
/// q_t, and the producer's optional output left empty exactly when q_t is
/// there (the dual cast does not store it).
LogicalResult verifyEpilogue(KernelOp op, const KernelSignature &row) {
  // The epilogue's buffers are optional ones (layernorm_bwd's own db is
  // not the epilogue's).
  auto given = [&](StringRef slot) {
    if (std::optional<unsigned> i = row.inputIndex(slot))
      return row.inputs()[*i].optional && *i < op.getInputs().size() &&
             !isNull(op.getInputs()[*i]);
    if (std::optional<unsigned> i = row.outputIndex(slot))
      return row.outputs()[*i].optional && *i < op.getOutputs().size() &&
             !isNull(op.getOutputs()[*i]);
    return false;
  };
  // The epilogue descriptor is the row's last constant (GPTRT_DESC_OPT).
  const bool descriptor = op.getConsts().size() == row.constants().size();
  auto refuse = [&](const Twine &why) {
    return op.emitOpError() << "kernel \"" << op.getKernel()
                            << "\": " << why
                            << " (see the epilogue descriptor in "
                               "runtime/abi/gptrt_kernels.def)";
  };
  if (descriptor != given("amax"))
    return refuse(descriptor ? "an epilogue descriptor without its amax buffer"
                             : "an amax buffer without an epilogue descriptor");
  if (given("scale") != given("q"))
    return refuse("the epilogue's cast needs both scale and q");
  if (given("q_t") && !given("q"))
    return refuse("q_t without q");
  if (given("db") && !given("q_t"))
    return refuse("db without q_t");
  const bool dual = given("q_t");
  for (auto [index, param] : llvm::enumerate(row.outputs())) {
    if (!param.epilogueValue)
      continue;
    const bool absent = index >= op.getOutputs().size() ||
                        isNull(op.getOutputs()[index]);
    if (absent != dual)
      return refuse(Twine("its output '") + param.name + "' " +
                    (dual ? "must be rt.null with q_t (the dual cast does not "
                            "store it)"
                          : "is missing, which only the dual cast (q_t) "
                            "allows"));
  }
  return success();
}

/// An rt.kernel call matches its row of the kernel table: the kernel
/// exists, and its buffers and constants have the row's number and kinds.
/// The runtime's C prototypes come from the same rows, so a call that
/// passes here calls the function it means.
LogicalResult verifyAgainstKernelTable(KernelOp op) {
  StringRef name = op.getKernel();
  const KernelSignature *row = lookupKernel(name);
  if (!row)
    return op.emitOpError()
           << "calls unknown runtime kernel \"" << name
           << "\": runtime/abi/gptrt_kernels.def has no row for it; fix the "
              "name, or add the kernel to the table and the runtime";
  if (!row->isKernel)
    return op.emitOpError() << "\"" << name
                            << "\" is a runtime entry point that rt-to-llvm "
                               "calls itself, not a kernel rt.kernel can call";
  if (failed(verifyBuffers(op, "input", op.getInputs(), row->inputs())) ||
      failed(verifyBuffers(op, "output", op.getOutputs(), row->outputs())))
    return failure();

  ArrayRef<KernelParam> constants = row->constants();
  ArrayAttr given = op.getConsts();
  const size_t required = requiredPrefix(constants);
  if (given.size() < required || given.size() > constants.size())
    return op.emitOpError()
           << "kernel \"" << name << "\" takes " << constants.size()
           << " constant" << (constants.size() == 1 ? "" : "s") << " ("
           << namesOf(constants) << ")"
           << (required != constants.size() ? ", the descriptor optional"
                                            : "")
           << ", got " << given.size()
           << "; the kernel table runtime/abi/gptrt_kernels.def is the "
              "reference";
  for (auto [index, c, param] : llvm::enumerate(given, constants)) {
    auto integer = dyn_cast<IntegerAttr>(c);
    auto real = dyn_cast<FloatAttr>(c);
    // Signless only: rt-to-llvm passes the attribute's type straight to
    // llvm.mlir.constant, which rejects si64/ui64.
    bool ok = false;
    StringRef expected;
    switch (param.kind) {
    case KernelParamKind::I64:
      ok = integer && integer.getType().isSignlessInteger(64);
      expected = "an i64 (the C ABI's int64_t)";
      break;
    case KernelParamKind::F64:
      ok = real && real.getType().isF64();
      expected = "an f64 (the C ABI's double)";
      break;
    case KernelParamKind::I64Table:
      ok = isa<DenseI64ArrayAttr>(c);
      expected = "an array<i64: ...> (the C ABI's const int64_t *)";
      break;
    case KernelParamKind::Descriptor:
      if (failed(verifyDescriptor(op, index, param, c)))
        return failure();
      ok = true;
      break;
    case KernelParamKind::Input:
    case KernelParamKind::Output:
      break;
    }
    if (!ok)
      return op.emitOpError() << "constant " << index << " ('" << param.name
                              << "') of kernel \"" << name << "\" must be "
                              << expected << ", got " << c;
  }
  if (failed(verifyTypeConstants(op, *row)))
    return failure();
  for (const KernelParam &param : constants)
    if (param.kind == KernelParamKind::Descriptor &&
        param.descriptor->name == "epilogue")
      return verifyEpilogue(op, *row);
  return success();
}
} // namespace

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"

LogicalResult ArenaOp::verify() {
  // I64Attr getters return uint64_t; compare as signed.
  int64_t size = getSize(), alignment = getAlignment();
  if (size < 0)
    return emitOpError() << "arena @" << getSymName()
                         << " has a negative size " << size;
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return emitOpError() << "arena @" << getSymName()
                         << " alignment must be a power of two, got "
                         << alignment;
  return success();
}

int64_t ViewOp::getSizeInBytes() { return bufferBytes(getType()); }

LogicalResult ViewOp::verify() {
  Type elementType = getType().getElementType();
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() == 0)
    return emitOpError() << "element type " << elementType
                         << " has no size in bytes; a view holds integers "
                            "or floats";
  int64_t elementBytes =
      llvm::divideCeil(getType().getElementTypeBitWidth(), 8);
  int64_t offset = getOffset(); // uint64_t from the I64Attr getter
  if (offset < 0 || offset % elementBytes != 0)
    return emitOpError() << "offset " << offset
                         << " must be a non-negative multiple of the element "
                            "size ("
                         << elementBytes << " bytes)";
  return success();
}

LogicalResult ViewOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto arena = symbols.lookupNearestSymbolFrom<ArenaOp>(*this, getArenaAttr());
  if (!arena)
    return emitOpError() << "refers to @" << getArena()
                         << ", which is not an rt.arena in this module";
  // Signed (the I64Attr getters return uint64_t), and offset > size - bytes
  // rather than offset + bytes > size, which could overflow.
  int64_t offset = getOffset(), bytes = getSizeInBytes();
  int64_t arenaSize = arena.getSize();
  if (offset > arenaSize - bytes)
    return emitOpError() << "view of " << bytes << " bytes at offset "
                         << offset << " runs past the end of arena @"
                         << getArena() << " (" << arenaSize << " bytes)";
  return success();
}

LogicalResult KernelOp::verify() {
  StringRef name = getKernel();
  if (name.empty() || !llvm::all_of(name, [](char c) {
        return llvm::isLower(c) || llvm::isDigit(c) || c == '_';
      }))
    return emitOpError() << "kernel name \"" << name
                         << "\" must be lower_snake_case (the runtime symbol "
                            "is gptrt_<name>)";
  if (getOutputs().empty())
    return emitOpError() << "kernel \"" << name
                         << "\" writes nothing; list the buffers it writes "
                            "under outs(...)";
  llvm::SmallPtrSet<Value, 8> written(getOutputs().begin(),
                                      getOutputs().end());
  for (Value input : getInputs())
    if (written.contains(input))
      return emitOpError() << "a buffer of kernel \"" << name
                           << "\" appears in both ins and outs; a kernel "
                              "that updates a buffer in place lists it "
                              "under outs only";
  if (failed(verifyAgainstKernelTable(*this)))
    return failure();
  return verifyStream(*this, getStream());
}

LogicalResult AllReduceOp::verify() {
  if (getInput().getType().getNumElements() !=
      getOutput().getType().getNumElements())
    return emitOpError() << "input and output must hold the same number of "
                            "elements, got "
                         << getInput().getType().getNumElements() << " and "
                         << getOutput().getType().getNumElements();
  return verifyCollective(*this, getInput().getType(), getOutput().getType(),
                          getStream());
}

LogicalResult ReduceScatterOp::verify() {
  int64_t in = getInput().getType().getNumElements();
  int64_t out = getOutput().getType().getNumElements();
  if (out == 0 || in % out != 0)
    return emitOpError() << "input of " << in
                         << " elements does not split into shards of " << out
                         << " (input = world size x output)";
  return verifyCollective(*this, getInput().getType(), getOutput().getType(),
                          getStream());
}

LogicalResult AllGatherOp::verify() {
  int64_t in = getInput().getType().getNumElements();
  int64_t out = getOutput().getType().getNumElements();
  if (in == 0 || out % in != 0)
    return emitOpError() << "output of " << out
                         << " elements is not a whole number of input shards "
                            "of "
                         << in << " (output = world size x input)";
  return verifyCollective(*this, getInput().getType(), getOutput().getType(),
                          getStream());
}

LogicalResult EventRecordOp::verify() {
  return verifyStream(*this, getStream());
}

LogicalResult EventWaitOp::verify() { return verifyStream(*this, getStream()); }

LogicalResult ReshapeOp::verify() {
  if (getSource().getType().getNumElements() !=
          getResult().getType().getNumElements() ||
      getSource().getType().getElementType() !=
          getResult().getType().getElementType())
    return emitOpError() << "reinterprets " << getSource().getType() << " as "
                         << getResult().getType()
                         << "; both must hold the same elements";
  return success();
}

LogicalResult BindOp::verify() {
  if (getName().empty())
    return emitOpError("needs a name (\"tokens\", \"loss\", ...)");
  return success();
}

LogicalResult ParamOp::verify() {
  bool tied = getTiedTo().has_value();
  bool placed = getValueOffset() && getGradOffset() && getAdamMOffset() &&
                getAdamVOffset();
  bool anyPlaced = getValueOffset() || getGradOffset() || getAdamMOffset() ||
                   getAdamVOffset();
  if (tied && anyPlaced)
    return emitOpError() << "parameter @" << getSymName()
                         << " is tied, so it has no buffers of its own; drop "
                            "its offsets";
  if (!tied && !placed)
    return emitOpError() << "parameter @" << getSymName()
                         << " needs value_offset, grad_offset, adam_m_offset "
                            "and adam_v_offset (or tied_to)";
  if (!tied && !getInit())
    return emitOpError() << "parameter @" << getSymName()
                         << " needs an init (normal, zeros or ones)";
  // The manifest maps any other string to zeros without a word.
  if (std::optional<StringRef> init = getInit();
      init && *init != "normal" && *init != "zeros" && *init != "ones")
    return emitOpError() << "parameter @" << getSymName()
                         << " has init \"" << *init
                         << "\"; expected normal, zeros or ones";
  return success();
}
