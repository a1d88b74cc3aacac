// The names --precision and fp8-precision{policy=...} accept, each with the
// factory of its PrecisionPolicy. gptc's built-in policies are registered
// first; plugins (PluginApi.h) add theirs when gptc loads them.
#ifndef GPTC_COMPILER_PRECISION_POLICYREGISTRY_H
#define GPTC_COMPILER_PRECISION_POLICYREGISTRY_H

#include "compiler/precision/PrecisionPolicy.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gptc {

using PolicyFactory = std::function<std::unique_ptr<PrecisionPolicy>()>;

struct PolicyEntry {
  std::string name;
  /// One line for listings, e.g. "FP8 except the first and last block".
  std::string summary;
  PolicyFactory create;
  /// Where the policy comes from: "built in" or the plugin's path.
  std::string origin;
};

class PolicyRegistry {
public:
  /// The registry gptc and gpt-opt use: the built-in policies, then those of
  /// every plugin loaded so far.
  static PolicyRegistry &global();

  /// Adds a policy; false (and no change) if the name is already taken.
  bool add(llvm::StringRef name, llvm::StringRef summary,
           PolicyFactory create);
  bool add(PolicyEntry entry);

  /// The entry named `name`, or nullptr.
  const PolicyEntry *lookup(llvm::StringRef name) const;

  /// In registration order, so listings show built-ins first.
  llvm::ArrayRef<PolicyEntry> entries() const { return policies; }

  /// "a, b or c": the names, then `alsoAccepted` (gptc's fp32, which is no
  /// policy), for error messages that list the choices.
  std::string listNames(llvm::ArrayRef<llvm::StringRef> alsoAccepted = {}) const;

private:
  std::vector<PolicyEntry> policies;
};

} // namespace gptc

#endif // GPTC_COMPILER_PRECISION_POLICYREGISTRY_H
