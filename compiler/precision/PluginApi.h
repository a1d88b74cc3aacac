// The ABI between gptc and a precision-policy plugin: a shared library that
// defines the one entry point below, which gptc --load-pass-plugin=LIB.so
// calls right after loading it. The entry point returns a description whose
// first field is the API version the plugin was built against; gptc refuses
// a plugin of any other version instead of calling into a layout it does
// not know. docs/writing-a-precision-policy.md walks through an example.
#ifndef GPTC_COMPILER_PRECISION_PLUGINAPI_H
#define GPTC_COMPILER_PRECISION_PLUGINAPI_H

#include "compiler/precision/PolicyRegistry.h"

#include <cstdint>

/// Bumped whenever GptcPrecisionPluginInfo, PrecisionPolicy, GemmOperand,
/// PrecisionDecision or PolicyRegistry change in a way a built plugin would
/// notice.
#define GPTC_PRECISION_PLUGIN_API_VERSION 2

/// The entry point's name, for dlsym.
#define GPTC_PRECISION_PLUGIN_ENTRY "gptcPrecisionPluginInfo"

extern "C" {

struct GptcPrecisionPluginInfo {
  /// GPTC_PRECISION_PLUGIN_API_VERSION of the headers the plugin was built
  /// with. First in every version of this struct, so any gptc can read it.
  uint32_t apiVersion;
  /// For messages, e.g. "fp8-first-last-bf16".
  const char *pluginName;
  const char *pluginVersion;
  /// Adds the plugin's policies (PolicyRegistry::add).
  void (*registerPolicies)(gptc::PolicyRegistry *registry);
};

/// Defined by the plugin. Visible even when the plugin hides its other
/// symbols (-fvisibility=hidden), since gptc finds it with dlsym.
__attribute__((visibility("default"))) const GptcPrecisionPluginInfo *
gptcPrecisionPluginInfo(void);

} // extern "C"

#endif // GPTC_COMPILER_PRECISION_PLUGINAPI_H
