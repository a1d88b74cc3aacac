// The library behind the gptc tool: reads a gpt-dialect module, verifies it,
// runs the compilation phases and writes what was asked for.
#ifndef GPTC_COMPILER_DRIVER_GPTCMAIN_H
#define GPTC_COMPILER_DRIVER_GPTCMAIN_H

namespace gptc {

/// Runs gptc with command-line arguments; returns the process exit code.
int gptcMain(int argc, char **argv);

} // namespace gptc

#endif // GPTC_COMPILER_DRIVER_GPTCMAIN_H
