// rt-to-llvm: entry points become LLVM functions calling the runtime's C ABI
// (see Passes.td). The call signatures follow runtime/abi/gptrt.h: context,
// one pointer per buffer (ins then outs), then int64_t / double constants.
#include "compiler/transforms/Passes.h"

#include "dialects/rt/KernelTable.h"
#include "runtime/abi/ManifestSection.h"
#include "runtime/abi/gptrt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace gptc {
#define GEN_PASS_DEF_RTTOLLVM
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace rt = gptc::rt;

namespace {

class RtToLLVMPass : public gptc::impl::RtToLLVMBase<RtToLLVMPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    builder.setInsertionPointToEnd(module.getBody());
    ptr = LLVM::LLVMPointerType::get(context);
    i64 = IntegerType::get(context, 64);

    for (auto [index, arena] : llvm::enumerate(module.getOps<rt::ArenaOp>()))
      arenaIndex[arena.getSymName()] = index;

    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (failed(lowerEntry(builder, module, func)))
        return signalPassFailure();
    // Entry lowering left the builder before an erased function.
    builder.setInsertionPointToEnd(module.getBody());
    emitAbiVersion(builder, module);
    if (auto manifest = module->getAttrOfType<StringAttr>("rt.manifest"))
      emitManifest(builder, module, manifest);

    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<rt::ArenaOp, rt::ParamOp>(op))
        op.erase();
    for (NamedAttribute attr : module->getAttrs())
      if (attr.getName().getValue().starts_with("gpt.") ||
          attr.getName().getValue().starts_with("rt."))
        module->removeAttr(attr.getName());

    // Nothing but LLVM may be left: an unconverted op would otherwise vanish
    // silently in the translation to LLVM IR.
    WalkResult leftover = module.walk([](Operation *op) {
      if (isa<ModuleOp>(op) || isa<LLVM::LLVMDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError("was not converted by rt-to-llvm; only rt entry points "
                      "(after rt-bufferize and rt-plan-memory) can be lowered");
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }

private:
  /// `name`'s declaration, created on first use.
  LLVM::LLVMFuncOp declare(OpBuilder &builder, ModuleOp module, StringRef name,
                           Type result, ArrayRef<Type> args) {
    if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return existing;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    return LLVM::LLVMFuncOp::create(builder, module.getLoc(), name,
                                    LLVM::LLVMFunctionType::get(result, args));
  }

  LogicalResult lowerEntry(OpBuilder &builder, ModuleOp module,
                           func::FuncOp func) {
    MLIRContext *context = &getContext();
    Type voidType = LLVM::LLVMVoidType::get(context);
    if (func.getNumArguments() || func.getNumResults())
      return func.emitOpError("is not an rt entry point (it has arguments or "
                              "results); run rt-bufferize first");
    builder.setInsertionPoint(func);
    auto entry = LLVM::LLVMFuncOp::create(
        builder, func.getLoc(), ("gpt_" + func.getName()).str(),
        LLVM::LLVMFunctionType::get(voidType, {ptr}));
    Block *body = entry.addEntryBlock(builder);
    OpBuilder b = OpBuilder::atBlockEnd(body);
    Value ctx = body->getArgument(0);

    DenseMap<Value, Value> addresses;
    llvm::StringMap<Value> bases;
    auto base = [&](StringRef arena, Location loc) -> Value {
      Value &value = bases[arena];
      if (!value) {
        auto fn = declare(builder, module, "gptrt_arena_base", ptr, {ptr, i64});
        Value index = LLVM::ConstantOp::create(
            b, loc, i64, b.getI64IntegerAttr(arenaIndex.lookup(arena)));
        value = LLVM::CallOp::create(b, loc, fn, ValueRange{ctx, index})
                    .getResult();
      }
      return value;
    };

    for (Operation &op : func.front()) {
      Location loc = op.getLoc();
      if (auto view = dyn_cast<rt::ViewOp>(op)) {
        if (!arenaIndex.count(view.getArena()))
          return view.emitOpError() << "refers to an unknown arena @"
                                    << view.getArena();
        Value arenaBase = base(view.getArena(), loc);
        // Byte offsets can exceed 32 bits: index with an i64 constant.
        Value offset = LLVM::ConstantOp::create(
            b, loc, i64, b.getI64IntegerAttr(view.getOffset()));
        addresses[view.getResult()] = LLVM::GEPOp::create(
            b, loc, ptr, b.getI8Type(), arenaBase, ValueRange{offset});
      } else if (auto reshape = dyn_cast<rt::ReshapeOp>(op)) {
        addresses[reshape.getResult()] = addresses.lookup(reshape.getSource());
      } else if (auto null = dyn_cast<rt::NullOp>(op)) {
        addresses[null.getResult()] = LLVM::ZeroOp::create(b, loc, ptr);
      } else if (auto kernel = dyn_cast<rt::KernelOp>(op)) {
        // The verifier matched the call to its row: optional buffers and a
        // descriptor the call leaves out at the end of their group are
        // passed as null pointers.
        const rt::KernelSignature *row = rt::lookupKernel(kernel.getKernel());
        SmallVector<Value> args{ctx};
        SmallVector<Type> types{ptr};
        auto pushBuffers = [&](ValueRange buffers, size_t expected) {
          for (Value buffer : buffers) {
            Value address = addresses.lookup(buffer);
            if (!address)
              return false;
            args.push_back(address);
            types.push_back(ptr);
          }
          for (size_t i = buffers.size(); i < expected; ++i) {
            args.push_back(LLVM::ZeroOp::create(b, loc, ptr));
            types.push_back(ptr);
          }
          return true;
        };
        if (!row)
          return kernel.emitOpError("calls a kernel the kernel table does not "
                                    "have; run the verifier");
        if (!pushBuffers(kernel.getInputs(), row->inputs().size()) ||
            !pushBuffers(kernel.getOutputs(), row->outputs().size()))
          return kernel.emitOpError("passes a value that is not an rt.view "
                                    "buffer; the C ABI takes buffers and "
                                    "constants only");
        for (auto [index, param] : llvm::enumerate(row->constants())) {
          if (index >= kernel.getConsts().size()) {
            args.push_back(LLVM::ZeroOp::create(b, loc, ptr));
            types.push_back(ptr);
            continue;
          }
          Attribute c = kernel.getConsts()[index];
          if (auto fields = dyn_cast<DictionaryAttr>(c)) {
            args.push_back(LLVM::AddressOfOp::create(
                b, loc,
                constantTable(builder, module,
                              descriptorFields(*param.descriptor, fields))));
            types.push_back(ptr);
            continue;
          }
          if (auto table = dyn_cast<DenseI64ArrayAttr>(c)) {
            args.push_back(LLVM::AddressOfOp::create(
                b, loc, constantTable(builder, module, table)));
            types.push_back(ptr);
            continue;
          }
          TypedAttr typed = cast<TypedAttr>(c);
          args.push_back(LLVM::ConstantOp::create(b, loc, typed.getType(), typed));
          types.push_back(typed.getType());
        }
        auto fn = declare(builder, module, ("gptrt_" + kernel.getKernel()).str(),
                          voidType, types);
        if (fn.getFunctionType().getParams() != ArrayRef<Type>(types))
          return kernel.emitOpError()
                 << "calls gptrt_" << kernel.getKernel()
                 << " with a different signature than an earlier call";
        LLVM::CallOp::create(b, loc, fn, args);
      } else if (isa<rt::BindOp>(op)) {
        continue;  // recorded in the manifest
      } else if (isa<func::ReturnOp>(op)) {
        LLVM::ReturnOp::create(b, loc, ValueRange{});
      } else {
        return op.emitOpError("has no lowering in rt-to-llvm");
      }
    }
    func.erase();
    return success();
  }

  // A descriptor's fields in the C struct's order (all int64_t, so the
  // struct is this array), those the dictionary leaves out defaulted.
  DenseI64ArrayAttr descriptorFields(const rt::KernelDescriptor &descriptor,
                                     DictionaryAttr given) {
    SmallVector<int64_t> values;
    for (const rt::KernelField &field : descriptor.fields) {
      auto value = given.getAs<IntegerAttr>(field.name);
      values.push_back(value ? value.getInt() : field.defaultValue);
    }
    return DenseI64ArrayAttr::get(&getContext(), values);
  }

  // A read-only global holding `table` (one per distinct table), for a
  // kernel's `const int64_t *` or descriptor argument.
  LLVM::GlobalOp constantTable(OpBuilder &builder, ModuleOp module,
                               DenseI64ArrayAttr table) {
    LLVM::GlobalOp &global = tables[table];
    if (global)
      return global;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    const int64_t size = std::max<int64_t>(table.size(), 1);
    SmallVector<int64_t> values(table.asArrayRef());
    values.resize(size, 0);
    auto type = RankedTensorType::get({size}, i64);
    global = LLVM::GlobalOp::create(
        builder, module.getLoc(), LLVM::LLVMArrayType::get(i64, size),
        /*isConstant=*/true, LLVM::Linkage::Internal,
        "gptrt_table_" + std::to_string(tables.size() - 1),
        DenseIntElementsAttr::get(type, ArrayRef<int64_t>(values)));
    return global;
  }

  void emitAbiVersion(OpBuilder &builder, ModuleOp module) {
    Type i32 = builder.getI32Type();
    auto fn = LLVM::LLVMFuncOp::create(builder, module.getLoc(),
                                       "gpt_abi_version",
                                       LLVM::LLVMFunctionType::get(i32, {}));
    OpBuilder b = OpBuilder::atBlockEnd(fn.addEntryBlock(builder));
    Value version = LLVM::ConstantOp::create(
        b, module.getLoc(), i32, b.getI32IntegerAttr(GPTRT_ABI_VERSION));
    LLVM::ReturnOp::create(b, module.getLoc(), version);
  }

  // The manifest goes in its own section behind a header with its size and
  // checksum (runtime/abi/ManifestSection.h), which the runtime checks
  // before dlopen; gpt_manifest() returns the payload after the header.
  void emitManifest(OpBuilder &builder, ModuleOp module, StringAttr payload) {
    namespace section = gptrt::manifest_section;
    Location loc = module.getLoc();
    const std::string bytes = section::sectionBytes(payload.getValue().str());
    auto arrayType =
        LLVM::LLVMArrayType::get(builder.getI8Type(), bytes.size());
    auto global = LLVM::GlobalOp::create(
        builder, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Internal,
        "gpt_manifest_bytes", builder.getStringAttr(bytes), /*alignment=*/8);
    global.setSection(StringRef(section::kName));
    auto fn = LLVM::LLVMFuncOp::create(builder, loc, "gpt_manifest",
                                       LLVM::LLVMFunctionType::get(ptr, {ptr}));
    Block *body = fn.addEntryBlock(builder);
    OpBuilder b = OpBuilder::atBlockEnd(body);
    Value size = LLVM::ConstantOp::create(
        b, loc, i64, b.getI64IntegerAttr(payload.getValue().size()));
    LLVM::StoreOp::create(b, loc, size, body->getArgument(0));
    Value address = LLVM::AddressOfOp::create(b, loc, global);
    Value start = LLVM::GEPOp::create(
        b, loc, ptr, b.getI8Type(), address,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(section::kHeaderBytes)});
    LLVM::ReturnOp::create(b, loc, start);
  }

  Type ptr, i64;
  llvm::StringMap<int64_t> arenaIndex;
  DenseMap<Attribute, LLVM::GlobalOp> tables;
};

} // namespace
