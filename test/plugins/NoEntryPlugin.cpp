// Test library that loads fine but is no precision plugin: it does not
// define gptcPrecisionPluginInfo.
extern "C" int gptcTestNotAPlugin(void) { return 0; }
