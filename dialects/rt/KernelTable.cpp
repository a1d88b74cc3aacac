// The kernel table's rows as KernelSignatures, expanded from
// runtime/abi/gptrt_kernels.def (see KernelTable.h).
#include "dialects/rt/KernelTable.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <type_traits>

namespace gptc::rt {
namespace {

template <typename T> constexpr KernelElement elementOf() {
  if constexpr (std::is_void_v<T>)
    return KernelElement::Any;
  else if constexpr (std::is_same_v<T, float>)
    return KernelElement::F32;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return KernelElement::Bf16;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return KernelElement::Fp8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return KernelElement::I32;
  else
    static_assert(!sizeof(T), "a buffer element type the kernel table does "
                              "not know: add it to KernelElement");
}

// One field array and KernelDescriptor per GPTRT_DESCRIPTOR row.
namespace descriptorFields {
#define GPTRT_KERNEL(name, list)
#define GPTRT_FIELD(name, default_value) {#name, default_value},
#define GPTRT_DESCRIPTOR(name, fields) const KernelField name[] = {fields};
#include "runtime/abi/gptrt_kernels.def"
#undef GPTRT_FIELD
} // namespace descriptorFields
namespace descriptors {
#define GPTRT_KERNEL(name, list)
#define GPTRT_DESCRIPTOR(name, fields)                                         \
  const KernelDescriptor name{#name, descriptorFields::name};
#include "runtime/abi/gptrt_kernels.def"
} // namespace descriptors

// One parameter array per row. The trailing sentinel keeps a row without
// parameters a valid array; rows() drops it.
namespace rowParams {
#define GPTRT_IN(type, name)                                                   \
  {KernelParamKind::Input, elementOf<type>(), #name},
#define GPTRT_IN_OPT(type, name)                                               \
  {KernelParamKind::Input, elementOf<type>(), #name, true},
#define GPTRT_OUT(type, name)                                                  \
  {KernelParamKind::Output, elementOf<type>(), #name},
#define GPTRT_OUT_OPT(type, name)                                              \
  {KernelParamKind::Output, elementOf<type>(), #name, true},
#define GPTRT_OUT_VALUE(type, name)                                            \
  {KernelParamKind::Output, elementOf<type>(), #name, true, nullptr, true},
#define GPTRT_I64(name) {KernelParamKind::I64, KernelElement::None, #name},
#define GPTRT_F64(name) {KernelParamKind::F64, KernelElement::None, #name},
#define GPTRT_I64_TABLE(name)                                                  \
  {KernelParamKind::I64Table, KernelElement::None, #name},
#define GPTRT_DESC(desc)                                                       \
  {KernelParamKind::Descriptor, KernelElement::None, #desc, false,             \
   &descriptors::desc},
#define GPTRT_DESC_OPT(desc)                                                   \
  {KernelParamKind::Descriptor, KernelElement::None, #desc, true,              \
   &descriptors::desc},
// The row's list arrives expanded (commas and all), so it is passed on as
// the variadic part.
#define GPTRT_ROW_PARAMS(name, ...)                                            \
  const KernelParam name[] = {                                                 \
      __VA_ARGS__{KernelParamKind::I64, KernelElement::None, nullptr}};
#define GPTRT_KERNEL(name, list) GPTRT_ROW_PARAMS(name, list)
#define GPTRT_ENTRY(result, name, list) GPTRT_ROW_PARAMS(name, list)
#include "runtime/abi/gptrt_kernels.def"
#undef GPTRT_ROW_PARAMS
} // namespace rowParams

template <size_t N>
llvm::ArrayRef<KernelParam> withoutSentinel(const KernelParam (&row)[N]) {
  return llvm::ArrayRef<KernelParam>(row, N - 1);
}

const KernelSignature kRows[] = {
#define GPTRT_KERNEL(name, list)                                               \
  {#name, true, withoutSentinel(rowParams::name)},
#define GPTRT_ENTRY(result, name, list)                                        \
  {#name, false, withoutSentinel(rowParams::name)},
#include "runtime/abi/gptrt_kernels.def"
};
#undef GPTRT_IN
#undef GPTRT_IN_OPT
#undef GPTRT_OUT
#undef GPTRT_OUT_OPT
#undef GPTRT_OUT_VALUE
#undef GPTRT_I64
#undef GPTRT_F64
#undef GPTRT_I64_TABLE
#undef GPTRT_DESC
#undef GPTRT_DESC_OPT

llvm::ArrayRef<KernelParam> paramsOfKind(llvm::ArrayRef<KernelParam> params,
                                         bool (*keep)(const KernelParam &)) {
  // The table keeps inputs, outputs and constants in that order (the C
  // calling convention), so each kind is one contiguous run.
  const KernelParam *begin = params.begin();
  while (begin != params.end() && !keep(*begin))
    ++begin;
  const KernelParam *end = begin;
  while (end != params.end() && keep(*end))
    ++end;
  return llvm::ArrayRef<KernelParam>(begin, end);
}

} // namespace

llvm::ArrayRef<KernelParam> KernelSignature::inputs() const {
  return paramsOfKind(params, [](const KernelParam &p) {
    return p.kind == KernelParamKind::Input;
  });
}

llvm::ArrayRef<KernelParam> KernelSignature::outputs() const {
  return paramsOfKind(params, [](const KernelParam &p) {
    return p.kind == KernelParamKind::Output;
  });
}

llvm::ArrayRef<KernelParam> KernelSignature::constants() const {
  return paramsOfKind(params,
                      [](const KernelParam &p) { return !p.isBuffer(); });
}

namespace {
std::optional<unsigned> indexOf(llvm::ArrayRef<KernelParam> params,
                                llvm::StringRef name) {
  for (auto [index, param] : llvm::enumerate(params))
    if (name == param.name)
      return index;
  return std::nullopt;
}
} // namespace

std::optional<unsigned>
KernelSignature::constantIndex(llvm::StringRef name) const {
  return indexOf(constants(), name);
}

std::optional<unsigned>
KernelSignature::inputIndex(llvm::StringRef name) const {
  return indexOf(inputs(), name);
}

std::optional<unsigned>
KernelSignature::outputIndex(llvm::StringRef name) const {
  return indexOf(outputs(), name);
}

const KernelField *KernelDescriptor::field(llvm::StringRef name) const {
  for (const KernelField &f : fields)
    if (name == f.name)
      return &f;
  return nullptr;
}

llvm::ArrayRef<KernelSignature> kernelTable() { return kRows; }

const KernelSignature *lookupKernel(llvm::StringRef name) {
  static const llvm::StringMap<const KernelSignature *> byName = [] {
    llvm::StringMap<const KernelSignature *> map;
    for (const KernelSignature &row : kRows)
      map[row.name] = &row;
    return map;
  }();
  return byName.lookup(name);
}

llvm::StringRef describeElement(KernelElement element) {
  switch (element) {
  case KernelElement::Any:
    return "any element type";
  case KernelElement::F32:
    return "f32";
  case KernelElement::Bf16:
    return "bf16";
  case KernelElement::Fp8:
    return "an FP8 format (f8E4M3FN or f8E5M2)";
  case KernelElement::I32:
    return "i32";
  case KernelElement::None:
    break;
  }
  return "no buffer";
}

} // namespace gptc::rt
