// Test plugin built for a plugin API newer than gptc's: gptc must refuse it
// before calling anything else in it.
#include "compiler/precision/PluginApi.h"

#include <cstdlib>

namespace {

void registerPolicies(gptc::PolicyRegistry *) {
  // Reaching this means gptc ignored the version: fail loudly.
  std::abort();
}

const GptcPrecisionPluginInfo info = {GPTC_PRECISION_PLUGIN_API_VERSION + 1,
                                      "test-future-api", "1",
                                      registerPolicies};

} // namespace

extern "C" const GptcPrecisionPluginInfo *gptcPrecisionPluginInfo(void) {
  return &info;
}
