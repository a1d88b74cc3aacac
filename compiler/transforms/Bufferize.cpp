// rt-bufferize: from gpt entry points on tensors to rt functions on buffers
// that call the runtime's kernels (see Passes.td). The kernel names and the
// order of their constants follow runtime/abi/gptrt.h exactly; a change
// there is a change here.
#include "compiler/transforms/Passes.h"
#include "compiler/transforms/RtEpilogue.h"

#include "runtime/abi/gptrt.h"

#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

namespace gptc {
#define GEN_PASS_DEF_RTBUFFERIZE
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace fp8 = gptc::fp8;
namespace gpt = gptc::gpt;
namespace rt = gptc::rt;

namespace {

int64_t numElements(Type type) {
  return cast<ShapedType>(type).getNumElements();
}

int64_t byteSize(Type type) {
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() *
         static_cast<int64_t>(
             llvm::divideCeil(shaped.getElementTypeBitWidth(), 8));
}

MemRefType bufferType(Type tensor) {
  auto type = cast<RankedTensorType>(tensor);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// One (batched) GEMM in the runtime's terms: see gptrt_gemm_desc.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

int64_t fp8Format(Type tensor) {
  return isa<Float8E5M2Type>(getElementTypeOrSelf(tensor)) ? GPTRT_FP8_E5M2
                                                           : GPTRT_FP8_E4M3;
}

/// The runtime's dtype code of a tensor that a kernel reads or writes as
/// f32 or bf16 storage (gpt-bf16-kernels), or nothing for other types.
std::optional<int64_t> storageDtype(Type tensor) {
  Type element = getElementTypeOrSelf(tensor);
  if (element.isF32())
    return GPTRT_DTYPE_F32;
  if (element.isBF16())
    return GPTRT_DTYPE_BF16;
  return std::nullopt;
}

/// Where the persistent state of each parameter lives (byte offsets).
struct ParamPlacement {
  int64_t value = 0, grad = 0, adamM = 0, adamV = 0;
};

/// Emits rt ops for one entry point.
class EntryLowering {
public:
  EntryLowering(OpBuilder &builder, ModuleOp module,
                const llvm::StringMap<ParamPlacement> &placements,
                const llvm::StringMap<int64_t> &inputOffsets,
                const llvm::StringMap<int64_t> &stateOffsets,
                int64_t gradsBytes)
      : b(builder), module(module), placements(placements),
        inputOffsets(inputOffsets), stateOffsets(stateOffsets),
        gradsBytes(gradsBytes) {}

  LogicalResult lower(func::FuncOp old);

private:
  // -- helpers ------------------------------------------------------------
  Value alloc(Type tensorType) {
    return rt::AllocOp::create(b, loc, bufferType(tensorType));
  }
  Value view(StringRef arena, int64_t offset, MemRefType type) {
    return rt::ViewOp::create(b, loc, type, arena, offset);
  }
  Attribute i64(int64_t v) { return b.getI64IntegerAttr(v); }
  Attribute f64(double v) { return b.getF64FloatAttr(v); }
  rt::KernelOp kernel(StringRef name, ValueRange ins, ValueRange outs,
                      ArrayRef<Attribute> consts = {}) {
    return rt::KernelOp::create(b, loc, name, ins, outs, /*stream=*/0,
                                b.getArrayAttr(consts));
  }
  /// The statistics slot of an FP8 cast in train_step (the next free one),
  /// and its description for the manifest as an `rt.fp8_stat` attribute;
  /// -1 elsewhere, where nothing is collected.
  int64_t statSlot(Value quantized, StringAttr layer, NamedAttrList &stat);
  LogicalResult lowerFused(fp8::FusedOp op);
  Value lookup(Value tensor) { return buffers.lookup(tensor); }
  /// The result buffer of a tensor value, allocated on first use.
  Value define(Value tensor) {
    Value buffer = alloc(tensor.getType());
    buffers[tensor] = buffer;
    return buffer;
  }
  const ParamPlacement &placement(StringRef param) {
    auto op = module.lookupSymbol<gpt::ParamOp>(param);
    if (std::optional<StringRef> tied = op.getTiedTo())
      return placements.find(*tied)->second;
    return placements.find(param)->second;
  }
  /// The amax history of a delayed-scaling state, in the fp8_state arena.
  Value stateView(fp8::StateOp state) {
    return view("fp8_state", stateOffsets.lookup(state.getSymName()),
                MemRefType::get({static_cast<int64_t>(state.getHistory())},
                                b.getF32Type()));
  }
  Value gradsBlock() { return arenaBlock("grads"); }
  /// A whole persistent arena of f32 (params and grads have the same size,
  /// the optimizer's moments twice that).
  Value arenaBlock(StringRef arena, int64_t copies = 1) {
    return view(arena, 0,
                MemRefType::get({copies * gradsBytes / 4}, b.getF32Type()));
  }

  // -- op by op -------------------------------------------------------------
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerMatmul(gpt::MatmulOp op);
  /// Fails (naming the op) unless every value is f32: parameters a kernel
  /// reads as f32 whatever the storage of its activations.
  LogicalResult requireF32(Operation *op, ValueRange values) {
    for (Value value : values)
      if (!getElementTypeOrSelf(value.getType()).isF32())
        return op->emitOpError()
               << "has a parameter operand of type " << value.getType()
               << "; its runtime kernel reads parameters as f32";
    return success();
  }
  /// rows, vocab_size, padded vocab, ignore_index and the logits' dtype:
  /// the constants of cross_entropy_fwd and _bwd alike.
  LogicalResult crossEntropyConsts(Operation *op, Value logits,
                                   int64_t vocab, int64_t ignoreIndex,
                                   SmallVectorImpl<Attribute> &consts) {
    auto type = cast<ShapedType>(logits.getType());
    int64_t width = type.getShape().back();
    consts.append({i64(type.getNumElements() / width), i64(vocab), i64(width),
                   i64(ignoreIndex)});
    return appendDtypes(op, {logits}, consts);
  }
  /// Appends the dtype code of each value to `consts`, in order.
  LogicalResult appendDtypes(Operation *op, ValueRange values,
                             SmallVectorImpl<Attribute> &consts);
  LogicalResult lowerScaledMatmul(fp8::ScaledMatmulOp op);
  void lowerCopies(Value src, ArrayRef<Value> parts, int64_t axis, bool split);

  OpBuilder &b;
  ModuleOp module;
  const llvm::StringMap<ParamPlacement> &placements;
  const llvm::StringMap<int64_t> &inputOffsets;
  const llvm::StringMap<int64_t> &stateOffsets;
  int64_t gradsBytes;
  DenseMap<Value, Value> buffers;
  Location loc = UnknownLoc::get(module.getContext());
  bool inTrainStep = false;
  int64_t nextStatSlot = 0;
};

LogicalResult EntryLowering::lower(func::FuncOp old) {
  inTrainStep = old.getName() == "train_step";
  auto entry = func::FuncOp::create(b, old.getLoc(), old.getName(),
                                    b.getFunctionType({}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(entry.addEntryBlock());
  for (BlockArgument arg : old.getArguments()) {
    loc = arg.getLoc();
    auto name = old.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "gpt.input");
    if (!name)
      return old.emitOpError() << "argument #" << arg.getArgNumber()
                               << " has no gpt.input name; the runtime fills "
                                  "inputs by name (tokens, targets)";
    auto offset = inputOffsets.find(name.getValue());
    Value buffer = view("inputs", offset->second, bufferType(arg.getType()));
    rt::BindOp::create(b, loc, rt::BindDirection::Input, name, buffer);
    buffers[arg] = buffer;
  }
  for (Operation &op : old.front()) {
    loc = op.getLoc();
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        auto name = old.getResultAttrOfType<StringAttr>(i, "gpt.output");
        if (!name)
          return old.emitOpError() << "result #" << i
                                   << " has no gpt.output name; the runtime "
                                      "reads outputs by name (loss, logits)";
        rt::BindOp::create(b, loc, rt::BindDirection::Output, name,
                           lookup(value));
      }
      func::ReturnOp::create(b, loc);
      continue;
    }
    if (failed(lowerOp(&op)))
      return failure();
  }
  old.erase();
  return success();
}

GemmShape gemmShape(ShapedType a, ShapedType w, ShapedType c, bool ta,
                    bool tb) {
  GemmShape g;
  g.ta = ta;
  g.tb = tb;
  g.m = c.getShape()[c.getRank() - 2];
  g.n = c.getShape().back();
  g.k = ta ? a.getShape()[a.getRank() - 2] : a.getShape().back();
  g.batch = c.getNumElements() / (g.m * g.n);
  if (w.getRank() == 2 && !ta) {
    // A weight shared by every batch: one GEMM over all rows.
    g.m *= g.batch;
    g.batch = 1;
  }
  if (g.batch > 1) {
    g.strideA = a.getShape()[a.getRank() - 2] * a.getShape().back();
    g.strideB = w.getRank() == 2
                    ? 0
                    : w.getShape()[w.getRank() - 2] * w.getShape().back();
    g.strideC = g.m * g.n;
  }
  return g;
}

LogicalResult EntryLowering::appendDtypes(Operation *op, ValueRange values,
                                          SmallVectorImpl<Attribute> &consts) {
  for (Value value : values) {
    std::optional<int64_t> dtype = storageDtype(value.getType());
    if (!dtype)
      return op->emitOpError()
             << "has an operand or result of type " << value.getType()
             << "; its runtime kernel reads and writes f32 or bf16 only";
    consts.push_back(i64(*dtype));
  }
  return success();
}

/// gptrt_gemm_desc's fields for a GEMM of `g`'s shape on `a`, `b` into a
/// `c` of the runtime's dtypes (GPTRT_DTYPE_*).
SmallVector<rt::NamedField> gemmFields(const GemmShape &g, int64_t a, int64_t b,
                                       int64_t c) {
  return {{"batch", g.batch},
          {"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"trans_a", g.ta},
          {"trans_b", g.tb},
          {"stride_a", g.strideA},
          {"stride_b", g.strideB},
          {"stride_c", g.strideC},
          {"a_dtype", a},
          {"b_dtype", b},
          {"c_dtype", c}};
}

LogicalResult EntryLowering::lowerMatmul(gpt::MatmulOp op) {
  auto a = cast<ShapedType>(op.getA().getType());
  // (The verifier allows a bf16 result only with bf16 operands.)
  const bool bf16Result = op.getType().getElementType().isBF16();
  auto w = cast<ShapedType>(op.getB().getType());
  auto c = cast<ShapedType>(op.getType());
  Value out = define(op.getResult());
  GemmShape g = gemmShape(a, w, c, op.getTransposeA(), op.getTransposeB());
  Value bias = op.getBias();
  if (bias && !getElementTypeOrSelf(bias.getType()).isF32())
    return op.emitOpError()
           << "has a bias of type " << bias.getType()
           << "; the runtime adds an f32 bias (in the GEMM's f32 "
              "epilogue): keep the bias f32";
  const bool bf16 = a.getElementType().isBF16();
  // bf16 operands (gpt-bf16-gemm): f32 accumulation, the f32 bias added in
  // the epilogue, an f32 or bf16 result. f32 operands: an f32 result, the
  // bias added after it.
  const int64_t operands = bf16 ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32;
  SmallVector<rt::NamedBuffer> optional;
  if (bias && bf16)
    optional.push_back({"bias", lookup(bias)});
  rt::createWithEpilogue(
      b, loc, "gemm", {lookup(op.getA()), lookup(op.getB())}, {out},
      {rt::descriptorAttr(
          b.getContext(), "gemm", "gemm_desc",
          gemmFields(g, operands, operands,
                     bf16Result ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32))},
      optional, {});
  if (bias && !bf16)
    kernel("bias_add", {lookup(bias)}, {out},
           {i64(numElements(c) / g.n), i64(g.n)});
  return success();
}

int64_t EntryLowering::statSlot(Value quantized, StringAttr layer,
                                NamedAttrList &stat) {
  if (!inTrainStep)
    return -1;
  // Name the cast after the GEMM it feeds: layer, which GEMM, which operand.
  StringRef gemm = "", operand = "";
  for (Operation *user : quantized.getUsers())
    if (auto mm = dyn_cast<fp8::ScaledMatmulOp>(user)) {
      if (auto role = mm->getAttrOfType<StringAttr>("gpt.role"))
        gemm = role.getValue();
      operand = mm.getA() == quantized ? "a" : "b";
      break;
    }
  int64_t slot = nextStatSlot++;
  stat.append("slot", i64(slot));
  stat.append("layer", layer);
  stat.append("gemm", b.getStringAttr(gemm));
  stat.append("operand", b.getStringAttr(operand));
  return slot;
}

/// The producer's kernel takes an output epilogue (gptrt_kernels.def): the
/// amax of its first output, and with a scale the FP8 copy too. The
/// descriptor gives the first output as rows x cols with its dtype, and for
/// a cast the format, whether the copy is transposed and the statistics
/// slot.
LogicalResult EntryLowering::lowerFused(fp8::FusedOp op) {
  Operation *producer = op.getProducer();
  Block *block = b.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  if (failed(lowerOp(producer)))
    return failure();
  SmallVector<rt::KernelOp> emitted;
  for (Operation &o : llvm::make_range(
           last ? std::next(last->getIterator()) : block->begin(), block->end()))
    if (auto k = dyn_cast<rt::KernelOp>(o))
      emitted.push_back(k);
  if (emitted.size() != 1)
    return op.emitOpError() << "fuses a " << producer->getName()
                            << " that lowers to " << emitted.size()
                            << " kernels; only single-kernel producers have "
                               "fused variants (fp8-fuse-amax picks those)";
  rt::KernelOp k = emitted.front();
  for (unsigned i = 0; i < op.getNumProducerResults(); ++i)
    buffers[op.getResult(i)] = lookup(producer->getResult(i));
  auto first = cast<ShapedType>(producer->getResult(0).getType());
  int64_t cols = first.getShape().back(), rows = numElements(first) / cols;

  if (!rt::takesEpilogue(k))
    return op.emitOpError() << "fuses a " << producer->getName()
                            << " whose kernel \"" << k.getKernel()
                            << "\" takes no output epilogue (the kernel "
                               "table gives it no epilogue descriptor)";
  SmallVector<rt::NamedBuffer> buffers{{"amax", define(op.getAmax())}};
  SmallVector<rt::NamedField> fields{
      {"rows", rows},
      {"cols", cols},
      {"out_dtype", first.getElementType().isBF16() ? GPTRT_DTYPE_BF16
                                                    : GPTRT_DTYPE_F32}};
  NamedAttrList stat;
  int64_t slot = -1;
  if (Value scale = op.getScale()) {
    buffers.push_back({"scale", lookup(scale)});
    buffers.push_back({"q", define(op.getQuantized())});
    slot = statSlot(op.getQuantized(), op.getLayerAttr(), stat);
    fields.append({{"format", fp8Format(op.getQuantized().getType())},
                   {"transpose", int64_t(op.getTranspose())},
                   {"stat_slot", slot}});
  }
  // After the buffers just defined, which it writes.
  if (k.getOperation() != &block->back())
    k->moveAfter(&block->back());
  loc = op.getLoc();
  rt::KernelOp fused = rt::withEpilogue(k, buffers, fields);
  fused->setLoc(loc);
  if (slot >= 0)
    fused->setAttr("rt.fp8_stat", stat.getDictionary(b.getContext()));
  return success();
}

LogicalResult EntryLowering::lowerScaledMatmul(fp8::ScaledMatmulOp op) {
  if (op.getAmax())
    return op.emitOpError()
           << "returns the amax of its output; the runtime computes it in the "
              "GEMM's epilogue only through fp8.fused (run fp8-fuse-amax, "
              "or take the amax with fp8.amax)";
  auto a = cast<ShapedType>(op.getA().getType());
  auto w = cast<ShapedType>(op.getB().getType());
  auto c = cast<ShapedType>(op.getResult().getType());
  Value out = define(op.getResult());
  GemmShape g = gemmShape(a, w, c, op.getTransposeA(), op.getTransposeB());
  SmallVector<rt::NamedField> fields = gemmFields(
      g, GPTRT_DTYPE_E4M3 + fp8Format(op.getA().getType()),
      GPTRT_DTYPE_E4M3 + fp8Format(op.getB().getType()),
      c.getElementType().isBF16() ? GPTRT_DTYPE_BF16 : GPTRT_DTYPE_F32);
  // Rowwise scales (vectors): one per row of c for a, one per column for b.
  auto scaling = [](Value scale) -> int64_t {
    return cast<ShapedType>(scale.getType()).getRank() == 1
               ? GPTRT_SCALING_ROWWISE
               : GPTRT_SCALING_TENSOR;
  };
  fields.append({{"a_scaling", scaling(op.getAScale())},
                 {"b_scaling", scaling(op.getBScale())},
                 {"fast_accum", int64_t(op.getFastAccum())}});
  rt::createWithEpilogue(
      b, loc, "gemm", {lookup(op.getA()), lookup(op.getB())}, {out},
      {rt::descriptorAttr(b.getContext(), "gemm", "gemm_desc", fields)},
      {{"scale_a", lookup(op.getAScale())},
       {"scale_b", lookup(op.getBScale())}},
      {});
  return success();
}

/// One copy_blocks call per part: a split reads parts out of `src`, a
/// concat writes them into it.
void EntryLowering::lowerCopies(Value whole, ArrayRef<Value> parts,
                                int64_t axis, bool split) {
  auto shape = cast<ShapedType>(whole.getType()).getShape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(shape.size()); ++i)
    inner *= shape[i];
  int64_t wholeRow = shape[axis] * inner, offset = 0;
  // Split and concat keep their element type (the verifier's rule), f32 or
  // bf16 (gpt-bf16-kernels); rt-bufferize's type check ran before.
  int64_t dtype = getElementTypeOrSelf(whole.getType()).isBF16()
                      ? GPTRT_DTYPE_BF16
                      : GPTRT_DTYPE_F32;
  for (Value part : parts) {
    int64_t partRow = cast<ShapedType>(part.getType()).getShape()[axis] * inner;
    if (split)
      kernel("copy_blocks", {lookup(whole)}, {lookup(part)},
             {i64(outer), i64(partRow), i64(partRow), i64(wholeRow), i64(0),
              i64(offset), i64(dtype)});
    else
      kernel("copy_blocks", {lookup(part)}, {lookup(whole)},
             {i64(outer), i64(partRow), i64(wholeRow), i64(partRow),
              i64(offset), i64(0), i64(dtype)});
    offset += partRow;
  }
}

LogicalResult EntryLowering::lowerOp(Operation *op) {
  auto rowsOf = [](Type t) {
    auto s = cast<ShapedType>(t);
    return s.getNumElements() / s.getShape().back();
  };
  auto widthOf = [](Type t) { return cast<ShapedType>(t).getShape().back(); };
  auto scratch = [&](ArrayRef<int64_t> shape) {
    return rt::AllocOp::create(b, loc, MemRefType::get(shape, b.getF32Type()));
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](gpt::ParamRefOp ref) {
        buffers[ref.getResult()] =
            view("params", placement(ref.getParam()).value,
                 bufferType(ref.getType()));
        return success();
      })
      .Case([&](gpt::ArangeOp o) {
        kernel("arange", {}, {define(o.getResult())},
               {i64(numElements(o.getType()))});
        return success();
      })
      .Case([&](fp8::FusedOp o) { return lowerFused(o); })
      .Case([&](fp8::AmaxRowsOp o) -> LogicalResult {
        auto in = cast<ShapedType>(o.getInput().getType());
        SmallVector<Attribute> consts{i64(rowsOf(in)), i64(widthOf(in)),
                                      i64(o.getAlong() == fp8::Axis::Cols)};
        if (failed(appendDtypes(o, {o.getInput()}, consts)))
          return failure();
        kernel("amax_rows", {lookup(o.getInput())}, {define(o.getResult())},
               consts);
        return success();
      })
      .Case([&](fp8::RowScalesOp o) {
        fp8::RecipeAttr recipe = o.getRecipe();
        kernel("row_scales", {lookup(o.getAmax())}, {define(o.getResult())},
               {i64(numElements(o.getType())), f64(recipe.getFormatMax()),
                i64(recipe.getMargin()), i64(recipe.isPowerOfTwo()),
                f64(recipe.getEps().convertToDouble())});
        return success();
      })
      .Case([&](fp8::QuantizeRowsOp o) -> LogicalResult {
        auto in = cast<ShapedType>(o.getInput().getType());
        NamedAttrList stat;
        int64_t slot = statSlot(o.getResult(), o.getLayerAttr(), stat);
        SmallVector<Attribute> consts{
            i64(rowsOf(in)), i64(widthOf(in)),
            i64(o.getAlong() == fp8::Axis::Cols), i64(fp8Format(o.getType())),
            i64(slot)};
        if (failed(appendDtypes(o, {o.getInput()}, consts)))
          return failure();
        rt::KernelOp k = kernel(o.getTranspose() ? "quantize_rows_transposed"
                                                 : "quantize_rows",
                                {lookup(o.getInput()), lookup(o.getScales())},
                                {define(o.getResult())}, consts);
        if (slot >= 0)
          k->setAttr("rt.fp8_stat", stat.getDictionary(b.getContext()));
        return success();
      })
      .Case([&](gpt::CastOp o) {
        auto dtype = [](Type tensor) -> int64_t {
          return getElementTypeOrSelf(tensor).isBF16() ? GPTRT_DTYPE_BF16
                                                       : GPTRT_DTYPE_F32;
        };
        kernel("convert", {lookup(o.getInput())}, {define(o.getResult())},
               {i64(numElements(o.getType())), i64(dtype(o.getInput().getType())),
                i64(dtype(o.getType()))});
        return success();
      })
      .Case([&](fp8::AmaxOp o) -> LogicalResult {
        SmallVector<Attribute> consts{i64(numElements(o.getInput().getType()))};
        if (failed(appendDtypes(o, {o.getInput()}, consts)))
          return failure();
        kernel("amax", {lookup(o.getInput())}, {define(o.getResult())},
               consts);
        return success();
      })
      .Case([&](fp8::ScaleFromAmaxOp o) {
        fp8::RecipeAttr recipe = o.getRecipe();
        kernel("scale_from_amax", {lookup(o.getAmax())}, {define(o.getResult())},
               {f64(recipe.getFormatMax()), i64(recipe.getMargin()),
                i64(recipe.isPowerOfTwo()),
                f64(recipe.getEps().convertToDouble())});
        return success();
      })
      .Case([&](fp8::QuantizeOp o) -> LogicalResult {
        NamedAttrList stat;
        int64_t slot = statSlot(o.getResult(), o.getLayerAttr(), stat);
        // Transposed: rows and columns of the input, else its size.
        SmallVector<Attribute> consts;
        if (o.getTranspose())
          consts = {i64(o.getInput().getType().getShape()[0]),
                    i64(o.getInput().getType().getShape()[1])};
        else
          consts = {i64(numElements(o.getType()))};
        consts.append({i64(fp8Format(o.getType())), i64(slot)});
        if (failed(appendDtypes(o, {o.getInput()}, consts)))
          return failure();
        rt::KernelOp k = kernel(o.getTranspose() ? "quantize_fp8_transposed"
                                                 : "quantize_fp8",
                                {lookup(o.getInput()), lookup(o.getScale())},
                                {define(o.getResult())}, consts);
        if (slot >= 0)
          k->setAttr("rt.fp8_stat", stat.getDictionary(b.getContext()));
        return success();
      })
      .Case([&](fp8::StateScaleOp o) {
        auto state = module.lookupSymbol<fp8::StateOp>(o.getState());
        fp8::RecipeAttr recipe = state.getRecipe();
        kernel("fp8_state_scale", {stateView(state)}, {define(o.getResult())},
               {i64(state.getHistory()), f64(recipe.getFormatMax()),
                i64(recipe.getMargin()), i64(recipe.isPowerOfTwo()),
                f64(recipe.getEps().convertToDouble()),
                i64(state.getReduction() == fp8::AmaxReduction::MostRecent)});
        return success();
      })
      .Case([&](fp8::StateUpdateOp o) {
        auto state = module.lookupSymbol<fp8::StateOp>(o.getState());
        kernel("fp8_state_update", {lookup(o.getAmax())}, {stateView(state)},
               {i64(state.getHistory())});
        return success();
      })
      .Case([&](fp8::ScaledMatmulOp o) { return lowerScaledMatmul(o); })
      .Case([&](gpt::FillOp o) {
        kernel("fill", {}, {define(o.getResult())},
               {i64(numElements(o.getType())),
                f64(o.getValue().convertToDouble())});
        return success();
      })
      .Case([&](gpt::EmbeddingOp o) -> LogicalResult {
        SmallVector<Attribute> consts{i64(numElements(o.getIds().getType())),
                                      i64(widthOf(o.getTable().getType()))};
        // The table and the result share one type (the verifier's rule).
        if (failed(appendDtypes(o, {o.getTable()}, consts)))
          return failure();
        kernel("embedding_fwd", {lookup(o.getTable()), lookup(o.getIds())},
               {define(o.getResult())}, consts);
        return success();
      })
      .Case([&](gpt::EmbeddingGradOp o) -> LogicalResult {
        auto table = cast<ShapedType>(o.getType());
        SmallVector<Attribute> consts{i64(numElements(o.getIds().getType())),
                                      i64(table.getShape()[0]),
                                      i64(table.getShape()[1])};
        if (failed(appendDtypes(o, {o.getResultGrad(), o.getResult()},
                                consts)))
          return failure();
        kernel("embedding_bwd", {lookup(o.getResultGrad()), lookup(o.getIds())},
               {define(o.getResult())}, consts);
        return success();
      })
      .Case([&](gpt::LayerNormOp o) -> LogicalResult {
        Type x = o.getInput().getType();
        if (failed(requireF32(o, {o.getWeight(), o.getBias()})))
          return failure();
        SmallVector<Attribute> consts{i64(rowsOf(x)), i64(widthOf(x)),
                                      f64(o.getEps().convertToDouble())};
        if (failed(appendDtypes(o, {o.getInput(), o.getNormalized()}, consts)))
          return failure();
        Value y = define(o.getNormalized());
        SmallVector<int64_t> rows(cast<ShapedType>(x).getShape().drop_back());
        Value mean = o.getStats().empty() ? scratch(rows) : define(o.getStats()[0]);
        Value rstd = o.getStats().empty() ? scratch(rows) : define(o.getStats()[1]);
        kernel("layernorm_fwd",
               {lookup(o.getInput()), lookup(o.getWeight()), lookup(o.getBias())},
               {y, mean, rstd}, consts);
        return success();
      })
      .Case([&](gpt::LayerNormGradOp o) -> LogicalResult {
        Type x = o.getInput().getType();
        if (failed(requireF32(o, {o.getWeight()})))
          return failure();
        SmallVector<Attribute> consts{i64(rowsOf(x)), i64(widthOf(x))};
        if (failed(appendDtypes(o,
                                {o.getResultGrad(), o.getInput(),
                                 o.getInputGrad(), o.getWeightGrad(),
                                 o.getBiasGrad()},
                                consts)))
          return failure();
        kernel("layernorm_bwd",
               {lookup(o.getResultGrad()), lookup(o.getInput()),
                lookup(o.getWeight()), lookup(o.getMean()), lookup(o.getRstd())},
               {define(o.getInputGrad()), define(o.getWeightGrad()),
                define(o.getBiasGrad())},
               consts);
        return success();
      })
      .Case([&](gpt::MatmulOp o) { return lowerMatmul(o); })
      .Case([&](gpt::ReduceLeadingOp o) -> LogicalResult {
        int64_t cols = numElements(o.getType());
        SmallVector<Attribute> consts{
            i64(numElements(o.getInput().getType()) / cols), i64(cols)};
        if (failed(appendDtypes(o, {o.getInput(), o.getResult()}, consts)))
          return failure();
        kernel("reduce_rows", {lookup(o.getInput())}, {define(o.getResult())},
               consts);
        return success();
      })
      .Case([&](gpt::AddOp o) -> LogicalResult {
        int64_t total = numElements(o.getType());
        int64_t inner = numElements(o.getRhs().getType());
        bool broadcast = inner != total;
        SmallVector<Attribute> consts{i64(broadcast ? total / inner : 1),
                                      i64(broadcast ? inner : total),
                                      i64(broadcast)};
        if (failed(appendDtypes(o, {o.getLhs(), o.getRhs(), o.getResult()},
                                consts)))
          return failure();
        kernel("add", {lookup(o.getLhs()), lookup(o.getRhs())},
               {define(o.getResult())}, consts);
        return success();
      })
      .Case([&](gpt::MulOp o) {
        kernel("scale", {lookup(o.getInput())}, {define(o.getResult())},
               {i64(numElements(o.getType())),
                f64(o.getScale().convertToDouble())});
        return success();
      })
      .Case([&](gpt::GeluOp o) -> LogicalResult {
        SmallVector<Attribute> consts{i64(numElements(o.getType()))};
        if (failed(appendDtypes(o, {o.getInput(), o.getResult()}, consts)))
          return failure();
        kernel("gelu_fwd", {lookup(o.getInput())}, {define(o.getResult())},
               consts);
        return success();
      })
      .Case([&](gpt::GeluGradOp o) -> LogicalResult {
        SmallVector<Attribute> consts{i64(numElements(o.getType()))};
        if (failed(appendDtypes(
                o, {o.getResultGrad(), o.getInput(), o.getInputGrad()},
                consts)))
          return failure();
        kernel("gelu_bwd", {lookup(o.getResultGrad()), lookup(o.getInput())},
               {define(o.getInputGrad())}, consts);
        return success();
      })
      .Case([&](gpt::SplitOp o) {
        SmallVector<Value> parts;
        for (Value result : o.getResults()) {
          define(result);
          parts.push_back(result);
        }
        // lowerCopies looks buffers up by tensor value.
        lowerCopies(o.getInput(), parts, o.getAxis(), /*split=*/true);
        return success();
      })
      .Case([&](gpt::ConcatOp o) {
        define(o.getResult());
        SmallVector<Value> parts(o.getInputs().begin(), o.getInputs().end());
        lowerCopies(o.getResult(), parts, o.getAxis(), /*split=*/false);
        return success();
      })
      .Case([&](gpt::ReshapeOp o) {
        buffers[o.getResult()] = rt::ReshapeOp::create(
            b, loc, bufferType(o.getType()), lookup(o.getInput()));
        return success();
      })
      .Case([&](gpt::TransposeOp o) -> LogicalResult {
        auto shape = cast<ShapedType>(o.getInput().getType()).getShape();
        int64_t rank = shape.size();
        if (rank > 6)
          return o.emitOpError("permutes at most 6 dimensions in the runtime");
        SmallVector<Attribute> consts{i64(rank)};
        for (int64_t i = 0; i < 6; ++i)
          consts.push_back(i64(i < rank ? shape[i] : 1));
        for (int64_t i = 0; i < 6; ++i)
          consts.push_back(i64(i < rank ? o.getPerm()[i] : i));
        kernel("permute", {lookup(o.getInput())}, {define(o.getResult())},
               consts);
        return success();
      })
      .Case([&](gpt::AttentionOp o) -> LogicalResult {
        auto shape = cast<ShapedType>(o.getQ().getType()).getShape();
        int64_t heads = o.getHeads();
        Value out = define(o.getAttended());
        Value lse = o.getLse().empty() ? scratch({shape[0], heads, shape[1]})
                                       : define(o.getLse()[0]);
        SmallVector<Attribute> consts{i64(shape[0]), i64(shape[1]),
                                      i64(shape[2]), i64(heads),
                                      i64(o.getCausal())};
        // q, k, v and the result share one type (the verifier's rule).
        if (failed(appendDtypes(o, {o.getQ()}, consts)))
          return failure();
        kernel("attention_fwd",
               {lookup(o.getQ()), lookup(o.getK()), lookup(o.getV())},
               {out, lse}, consts);
        return success();
      })
      .Case([&](gpt::AttentionGradOp o) -> LogicalResult {
        auto shape = cast<ShapedType>(o.getQ().getType()).getShape();
        SmallVector<Attribute> consts{i64(shape[0]), i64(shape[1]),
                                      i64(shape[2]), i64(o.getHeads()),
                                      i64(o.getCausal())};
        if (failed(appendDtypes(o, {o.getQ()}, consts)))
          return failure();
        kernel("attention_bwd",
               {lookup(o.getResultGrad()), lookup(o.getQ()), lookup(o.getK()),
                lookup(o.getV()), lookup(o.getResult()), lookup(o.getLse())},
               {define(o.getQGrad()), define(o.getKGrad()),
                define(o.getVGrad())},
               consts);
        return success();
      })
      .Case([&](gpt::CrossEntropyOp o) -> LogicalResult {
        Type logits = o.getLogits().getType();
        SmallVector<Attribute> consts;
        if (failed(crossEntropyConsts(o, o.getLogits(), o.getVocabSize(),
                                      o.getIgnoreIndex(), consts)))
          return failure();
        SmallVector<int64_t> rows(cast<ShapedType>(logits).getShape().drop_back());
        Value loss = define(o.getLoss());
        Value lse = o.getLse().empty() ? scratch(rows) : define(o.getLse()[0]);
        kernel("cross_entropy_fwd",
               {lookup(o.getLogits()), lookup(o.getTargets())}, {loss, lse},
               consts);
        return success();
      })
      .Case([&](gpt::CrossEntropyGradOp o) -> LogicalResult {
        // The logits and their gradient share one type (the verifier's).
        SmallVector<Attribute> consts;
        if (failed(crossEntropyConsts(o, o.getLogits(), o.getVocabSize(),
                                      o.getIgnoreIndex(), consts)))
          return failure();
        kernel("cross_entropy_bwd",
               {lookup(o.getLossGrad()), lookup(o.getLogits()),
                lookup(o.getTargets()), lookup(o.getLse())},
               {define(o.getLogitsGrad())}, consts);
        return success();
      })
      .Case([&](gpt::AccumulateGradOp o) -> LogicalResult {
        // The gradient buffer is f32 whatever the gradient's storage.
        auto gradType = cast<RankedTensorType>(o.getGrad().getType());
        Value grad = view("grads", placement(o.getParam()).grad,
                          MemRefType::get(gradType.getShape(), b.getF32Type()));
        SmallVector<Attribute> consts{i64(gradType.getNumElements())};
        if (failed(appendDtypes(o, {o.getGrad()}, consts)))
          return failure();
        kernel("accumulate", {lookup(o.getGrad())}, {grad}, consts);
        return success();
      })
      .Case([&](gpt::GradBucketReadyOp o) -> LogicalResult {
        // The bucket's gradients as one range of the grads arena: from the
        // first parameter's to the end of the last one's (any alignment
        // padding between them is zeros on every rank).
        int64_t begin = INT64_MAX, end = 0;
        for (Attribute attr : o.getParams()) {
          StringRef name = cast<FlatSymbolRefAttr>(attr).getValue();
          auto param = module.lookupSymbol<gpt::ParamOp>(name);
          int64_t offset = placement(name).grad;
          begin = std::min(begin, offset);
          end = std::max(end, offset + 4 * numElements(param.getType()));
        }
        int64_t covered = 0;
        for (auto param : module.getOps<gpt::ParamOp>()) {
          if (param.getTiedTo())
            continue;
          int64_t offset = placement(param.getSymName()).grad;
          if (offset >= begin && offset < end)
            ++covered;
        }
        if (covered != static_cast<int64_t>(o.getParams().size()))
          return o.emitOpError()
                 << "bucket " << o.getBucket() << " is not one contiguous "
                 << "range of the grads arena (its range holds " << covered
                 << " parameters' gradients, it names "
                 << o.getParams().size() << "); name consecutive parameters";
        kernel("grad_bucket_ready", {},
               {view("grads", begin,
                     MemRefType::get({(end - begin) / 4}, b.getF32Type()))},
               {i64((end - begin) / 4), i64(o.getBucket()),
                i64(o.getFp8() ? GPTRT_FP8_E4M3 : -1),
                i64(o.getScatter() ? 1 : 0)});
        return success();
      })
      .Case([&](gpt::GradSyncOp o) {
        // The sums land in the grads arena: that is what it writes.
        kernel("grad_sync", {}, {gradsBlock()}, {i64(o.getBuckets())});
        return success();
      })
      .Case([&](gpt::StepScalarOp o) {
        kernel("step_scalar", {}, {define(o.getResult())},
               {i64(static_cast<int64_t>(o.getKind()))});
        return success();
      })
      .Case([&](gpt::GradNormOp o) {
        kernel(o.getSharded() ? "global_norm_sharded" : "global_norm",
               {gradsBlock()}, {define(o.getResult())}, {i64(gradsBytes / 4)});
        return success();
      })
      .Case([&](gpt::ClipScaleOp o) {
        kernel("clip_scale", {lookup(o.getNorm())}, {define(o.getResult())},
               {f64(o.getMaxNorm().convertToDouble())});
        return success();
      })
      .Case([&](gpt::AdamWOp o) {
        auto param = module.lookupSymbol<gpt::ParamOp>(o.getParam());
        MemRefType type = bufferType(param.getType());
        const ParamPlacement &at = placement(o.getParam());
        if (o.getSharded()) {
          // The runtime places this rank's moments (its shard of the
          // optimizer arena); it needs the gradient's place in the arena
          // to know which elements the rank owns.
          kernel("adamw_sharded",
                 {view("grads", at.grad, type), lookup(o.getGradScale()),
                  lookup(o.getLr()), lookup(o.getStep())},
                 {view("params", at.value, type), arenaBlock("optimizer", 2)},
                 {i64(numElements(type)), i64(at.grad / 4),
                  i64(gradsBytes / 4),
                  f64(o.getBeta1().convertToDouble()),
                  f64(o.getBeta2().convertToDouble()),
                  f64(o.getEps().convertToDouble()),
                  f64(o.getWeightDecay().convertToDouble())});
          return success();
        }
        kernel("adamw",
               {view("grads", at.grad, type), lookup(o.getGradScale()),
                lookup(o.getLr()), lookup(o.getStep())},
               {view("params", at.value, type),
                view("optimizer", at.adamM, type),
                view("optimizer", at.adamV, type)},
               {i64(numElements(type)), f64(o.getBeta1().convertToDouble()),
                f64(o.getBeta2().convertToDouble()),
                f64(o.getEps().convertToDouble()),
                f64(o.getWeightDecay().convertToDouble())});
        return success();
      })
      .Case([&](gpt::GatherParamsOp) {
        kernel("gather_params", {}, {arenaBlock("params")},
               {i64(gradsBytes / 4)});
        return success();
      })
      .Case([&](gpt::ZeroGradsOp) {
        kernel("fill", {}, {gradsBlock()}, {i64(gradsBytes / 4), f64(0.0)});
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError(
            "has no lowering to runtime kernels in rt-bufferize");
      });
}

class RtBufferizePass : public gptc::impl::RtBufferizeBase<RtBufferizePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkShapes(module)))
      return signalPassFailure();

    // Persistent state, in parameter order.
    llvm::StringMap<ParamPlacement> placements;
    int64_t paramBytes = 0;
    for (auto param : module.getOps<gpt::ParamOp>()) {
      if (param.getTiedTo())
        continue;
      ParamPlacement &at = placements[param.getSymName()];
      at.value = at.grad = at.adamM = paramBytes;
      paramBytes = llvm::alignTo(paramBytes + byteSize(param.getType()),
                                 static_cast<uint64_t>(alignment));
    }
    for (auto &entry : placements)
      entry.second.adamV = entry.second.adamM + paramBytes;

    // Inputs by name: the same place in every entry point.
    llvm::StringMap<int64_t> inputOffsets;
    int64_t inputBytes = 0;
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments())
        if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                          "gpt.input"))
          if (!inputOffsets.count(name.getValue())) {
            inputOffsets[name.getValue()] = inputBytes;
            inputBytes = llvm::alignTo(inputBytes + byteSize(arg.getType()),
                                       static_cast<uint64_t>(alignment));
          }

    // Delayed-scaling states: one amax history each, packed.
    llvm::StringMap<int64_t> stateOffsets;
    int64_t stateBytes = 0;
    for (auto state : module.getOps<fp8::StateOp>()) {
      stateOffsets[state.getSymName()] = stateBytes;
      stateBytes = llvm::alignTo(
          stateBytes + 4 * static_cast<int64_t>(state.getHistory()), 64);
    }

    OpBuilder builder(&getContext());
    builder.setInsertionPointToStart(module.getBody());
    Location loc = module.getLoc();
    auto arena = [&](StringRef name, rt::ArenaKind kind, int64_t size) {
      rt::ArenaOp::create(builder, loc, name, kind, size, alignment);
    };
    arena("params", rt::ArenaKind::Params, paramBytes);
    arena("grads", rt::ArenaKind::Grads, paramBytes);
    arena("optimizer", rt::ArenaKind::Optimizer, 2 * paramBytes);
    arena("inputs", rt::ArenaKind::Inputs, inputBytes);
    arena("activations", rt::ArenaKind::Activations, 0);
    if (stateBytes)
      arena("fp8_state", rt::ArenaKind::Fp8State, stateBytes);

    // Which parameters the compiled optimizer decays: gpt-optimizer decides,
    // the manifest reports what it decided.
    llvm::StringSet<> decayed;
    module.walk([&](gpt::AdamWOp adamw) {
      if (adamw.getWeightDecay().convertToDouble() > 0.0)
        decayed.insert(adamw.getParam());
    });

    EntryLowering lowering(builder, module, placements, inputOffsets,
                           stateOffsets, paramBytes);
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      builder.setInsertionPoint(func);
      if (failed(lowering.lower(func)))
        return signalPassFailure();
    }
    // The fp8_state arena and the manifest hold what the states declared.
    for (auto state : llvm::make_early_inc_range(module.getOps<fp8::StateOp>()))
      state.erase();
    // Last, so that gpt.param and rt.param never share a symbol name.
    for (auto param :
         llvm::make_early_inc_range(module.getOps<gpt::ParamOp>())) {
      builder.setInsertionPoint(param);
      lowerParam(builder, param, placements,
                 decayed.contains(param.getSymName()));
      param.erase();
    }
  }

private:
  static LogicalResult checkShapes(ModuleOp module) {
    WalkResult result = module.walk([&](Operation *op) {
      for (Type type : llvm::concat<Type>(op->getOperandTypes(),
                                          op->getResultTypes())) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor)
          continue;
        if (!tensor.hasStaticShape()) {
          op->emitOpError() << "has a dynamic shape " << tensor
                            << "; run gpt-specialize{micro-batch=B} before "
                               "rt-bufferize";
          return WalkResult::interrupt();
        }
        Type element = tensor.getElementType();
        // bf16 is storage only (gpt.cast moves values in and out of it,
        // GEMMs read it, reshapes alias it, the kernels with a dtype per
        // operand read and write it);
        // FP8 lives between fp8.quantize and fp8.scaled_matmul. An
        // fp8.fused passes on its producer's types and makes FP8 too.
        bool fused = isa<fp8::FusedOp, fp8::YieldOp>(op);
        bool storage = (element.isBF16() &&
                        (isa<gpt::CastOp, gpt::MatmulOp, gpt::ReshapeOp,
                             gpt::AddOp, gpt::GeluOp, gpt::GeluGradOp,
                             gpt::LayerNormOp, gpt::LayerNormGradOp,
                             gpt::SplitOp, gpt::ConcatOp, gpt::AttentionOp,
                             gpt::AttentionGradOp, gpt::EmbeddingOp,
                             gpt::EmbeddingGradOp, gpt::CrossEntropyOp,
                             gpt::CrossEntropyGradOp, fp8::AmaxOp,
                             fp8::QuantizeOp, fp8::AmaxRowsOp,
                             fp8::QuantizeRowsOp, fp8::ScaledMatmulOp,
                             gpt::ReduceLeadingOp, gpt::AccumulateGradOp>(
                             op) ||
                         fused)) ||
                       (isa<Float8E4M3FNType, Float8E5M2Type>(element) &&
                        (isa<fp8::QuantizeOp, fp8::QuantizeRowsOp,
                             fp8::ScaledMatmulOp>(op) ||
                         fused));
        if (!element.isF32() && !element.isInteger(32) && !storage) {
          op->emitOpError() << "has element type " << element
                            << "; the runtime kernels take f32 tensors and "
                               "i32 ids (bf16 only through gpt.cast, as "
                               "GEMM operands and in the kernels with a "
                               "dtype per operand: see gpt-bf16-kernels)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }

  void lowerParam(OpBuilder &builder, gpt::ParamOp param,
                  const llvm::StringMap<ParamPlacement> &placements,
                  bool weightDecay) {
    auto op = rt::ParamOp::create(
        builder, param.getLoc(), param.getSymNameAttr(),
        TypeAttr::get(bufferType(param.getType())), param.getLayerAttr(),
        StringAttr(), FloatAttr(), IntegerAttr(), UnitAttr(),
        FlatSymbolRefAttr(), IntegerAttr(), IntegerAttr(), IntegerAttr(),
        IntegerAttr());
    if (std::optional<StringRef> tied = param.getTiedTo()) {
      op.setTiedToAttr(FlatSymbolRefAttr::get(&getContext(), *tied));
      return;
    }
    gpt::InitAttr init = *param.getInit();
    op.setInit(gpt::stringifyInitKind(init.getKind()));
    if (init.getKind() == gpt::InitKind::Normal)
      op.setStdAttr(builder.getF64FloatAttr(init.getStd().convertToDouble()));
    if (std::optional<uint64_t> rows = param.getRealRows())
      op.setRealRowsAttr(builder.getI64IntegerAttr(*rows));
    op.setWeightDecay(weightDecay);
    const ParamPlacement &at = placements.find(param.getSymName())->second;
    op.setValueOffsetAttr(builder.getI64IntegerAttr(at.value));
    op.setGradOffsetAttr(builder.getI64IntegerAttr(at.grad));
    op.setAdamMOffsetAttr(builder.getI64IntegerAttr(at.adamM));
    op.setAdamVOffsetAttr(builder.getI64IntegerAttr(at.adamV));
  }
};

} // namespace
