// The policy registry (see PolicyRegistry.h).
#include "compiler/precision/PolicyRegistry.h"

#include "compiler/precision/BuiltinPolicies.h"

namespace gptc {

PolicyRegistry &PolicyRegistry::global() {
  // Built on first use, so the built-ins are there before any plugin adds
  // to it, whatever order static initializers run in.
  static PolicyRegistry *registry = [] {
    auto *fresh = new PolicyRegistry;
    registerBuiltinPolicies(*fresh);
    return fresh;
  }();
  return *registry;
}

bool PolicyRegistry::add(llvm::StringRef name, llvm::StringRef summary,
                         PolicyFactory create) {
  return add(PolicyEntry{name.str(), summary.str(), std::move(create),
                         /*origin=*/""});
}

bool PolicyRegistry::add(PolicyEntry entry) {
  if (entry.name.empty() || !entry.create || lookup(entry.name))
    return false;
  policies.push_back(std::move(entry));
  return true;
}

const PolicyEntry *PolicyRegistry::lookup(llvm::StringRef name) const {
  for (const PolicyEntry &entry : policies)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

std::string
PolicyRegistry::listNames(llvm::ArrayRef<llvm::StringRef> alsoAccepted) const {
  std::vector<llvm::StringRef> names;
  for (const PolicyEntry &entry : policies)
    names.push_back(entry.name);
  names.insert(names.end(), alsoAccepted.begin(), alsoAccepted.end());
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      text += i + 1 == names.size() ? " or " : ", ";
    text += names[i].str();
  }
  return text;
}

} // namespace gptc
