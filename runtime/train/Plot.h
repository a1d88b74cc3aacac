// gptrun plot: training curves of one or more JSONL runs side by side (loss
// and validation loss, learning rate, tokens/s) as a PNG, drawn by gnuplot.
#ifndef GPTRT_TRAIN_PLOT_H
#define GPTRT_TRAIN_PLOT_H

#include <string>
#include <vector>

namespace gptrt::train {

/// Draws `runs` (gptrun --log files) into the PNG `output`, written
/// atomically. Throws std::runtime_error with one clear line on a missing or
/// malformed log or a missing gnuplot.
void plotRuns(const std::vector<std::string> &runs, const std::string &output);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_PLOT_H
