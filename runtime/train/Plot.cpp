// Plotting through gnuplot (see Plot.h): the logs become plain data files
// and a gnuplot script in a temporary directory.
#include "runtime/train/Plot.h"

#include <algorithm>
#include <array>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace gptrt::train {

namespace {

/// The number after `"key": ` in one JSONL record of gptrun's, if present.
std::optional<double> field(const std::string &line, const std::string &key) {
  size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos)
    return std::nullopt;
  const char *start = line.c_str() + at + key.size() + 3;
  char *end = nullptr;
  double value = std::strtod(start, &end);
  if (end == start)
    return std::nullopt;
  return value;
}

/// Per layer, over the steps that logged FP8 statistics (--fp8-stats-every):
/// the amax of its forward GEMM's input (operand a) and the worst underflow
/// fraction among all of its casts.
struct Fp8Series {
  std::vector<std::string> layers;  // in first-seen order
  std::map<std::string, std::vector<std::array<double, 3>>> points;  // step, amax, underflow
};

/// Reads the "fp8" object of one record into `series` at `step`.
void readFp8Stats(const std::string &line, double step, Fp8Series &series) {
  const std::string key = "\"fp8\": {";
  size_t at = line.find(key);
  if (at == std::string::npos)
    return;
  at += key.size();
  size_t end = line.find("}}", at);
  std::string object = line.substr(at, end == std::string::npos ? end : end - at + 1);
  std::map<std::string, std::array<double, 3>> layers;
  size_t pos = 0;
  while ((pos = object.find("\": {", pos)) != std::string::npos) {
    size_t open = object.rfind('"', pos - 1);
    std::string name = object.substr(open + 1, pos - open - 1);
    size_t close = object.find('}', pos);
    std::string fields = object.substr(pos, close - pos);
    pos = close;
    std::string layer = name.substr(0, name.find('/'));
    if (!layers.count(layer)) {
      layers[layer] = {step, NAN, 0};
      if (!series.points.count(layer))
        series.layers.push_back(layer);
    }
    auto &point = layers[layer];
    if (name == layer + "/forward/a")
      point[1] = field(fields, "amax").value_or(NAN);
    point[2] = std::max(point[2], 100 * field(fields, "underflow").value_or(0));
  }
  for (auto &[layer, point] : layers)
    series.points[layer].push_back(point);
}

/// Writes `dir/NAME.train` (step loss lr tokens/s) and `dir/NAME.val`
/// (step val_loss); returns whether any validation point was found.
bool convertLog(const std::string &log, const fs::path &train,
                const fs::path &val, Fp8Series &fp8) {
  std::ifstream in(log);
  if (!in)
    throw std::runtime_error("cannot read run log " + log +
                             ": give the JSONL file gptrun --log wrote");
  std::ofstream t(train), v(val);
  std::string line;
  int lineNo = 0, points = 0;
  bool anyVal = false;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto step = field(line, "step"), loss = field(line, "loss");
    if (!step || !loss)
      throw std::runtime_error(log + " line " + std::to_string(lineNo) +
                               " has no \"step\" and \"loss\": expected one "
                               "JSON object per step as gptrun --log writes");
    t << *step << ' ' << *loss << ' ' << field(line, "lr").value_or(NAN) << ' '
      << field(line, "tokens_per_s").value_or(NAN) << '\n';
    if (auto vl = field(line, "val_loss")) {
      v << *step << ' ' << *vl << '\n';
      anyVal = true;
    }
    readFp8Stats(line, *step, fp8);
    ++points;
  }
  if (points == 0)
    throw std::runtime_error("run log " + log + " holds no steps");
  return anyVal;
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

} // namespace

void plotRuns(const std::vector<std::string> &runs, const std::string &output) {
  if (runs.empty())
    throw std::runtime_error("plot needs at least one run log (gptrun --log)");
  char pattern[] = "/tmp/gptrun-plot-XXXXXX";
  if (!mkdtemp(pattern))
    throw std::runtime_error("cannot create a temporary directory for the plot");
  fs::path dir(pattern);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() { std::error_code ec; fs::remove_all(dir, ec); }
  } cleanup{dir};

  // Curves are named after their logs; clashing names (run.jsonl in two
  // directories) get their directory in front.
  std::vector<std::string> stems, names;
  for (const std::string &run : runs)
    stems.push_back(fs::path(run).stem().string());
  for (size_t i = 0; i < runs.size(); ++i)
    names.push_back(std::count(stems.begin(), stems.end(), stems[i]) > 1
                        ? (fs::path(runs[i]).parent_path().filename() /
                           stems[i]).string()
                        : stems[i]);

  std::vector<bool> hasVal;
  std::vector<Fp8Series> fp8(runs.size());
  bool anyFp8 = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    hasVal.push_back(convertLog(runs[i], dir / (std::to_string(i) + ".train"),
                                dir / (std::to_string(i) + ".val"), fp8[i]));
    // One data file per run and layer: step amax underflow%.
    for (size_t l = 0; l < fp8[i].layers.size(); ++l) {
      std::ofstream f(dir / (std::to_string(i) + ".fp8." + std::to_string(l)));
      for (const auto &p : fp8[i].points[fp8[i].layers[l]])
        f << p[0] << ' ' << p[1] << ' ' << p[2] << '\n';
      anyFp8 = true;
    }
  }

  fs::path tmpPng = fs::path(output).concat(".tmp.png");
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1400," << (anyFp8 ? 1350 : 900)
     << " font ',10'\n"
     << "set output " << quoted(tmpPng.string()) << "\n"
     << "set multiplot layout " << (anyFp8 ? 3 : 2) << ",2 title 'gptrun'\n"
     << "set grid\nset key outside bottom center horizontal\n"
     // Layer names such as lm_head are not gnuplot markup.
     << "set termoption noenhanced\n";
  auto plotColumn = [&](const char *title, const char *ylabel, int column,
                        bool withVal, bool logscale) {
    gp << "set title '" << title << "'\nset xlabel 'step'\nset ylabel '"
       << ylabel << "'\n" << (logscale ? "set logscale y\n" : "unset logscale y\n")
       << "plot ";
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::string &name = names[i];
      gp << (i ? ", " : "") << quoted((dir / (std::to_string(i) + ".train")).string())
         << " using 1:" << column << " with lines lw 2 lc " << i + 1
         << " title " << quoted(name);
      if (withVal && hasVal[i])
        gp << ", " << quoted((dir / (std::to_string(i) + ".val")).string())
           << " using 1:2 with linespoints lw 2 dt 2 pt 7 lc " << i + 1
           << " title " << quoted(name + " val");
    }
    gp << "\n";
  };
  plotColumn("loss (train, and val dashed)", "loss", 2, true, false);
  plotColumn("loss, log scale", "loss", 2, true, true);
  plotColumn("learning rate", "lr", 3, false, false);
  plotColumn("throughput", "tokens/s", 4, false, false);
  // FP8 statistics, one curve per layer, of the first run that logged
  // them (several runs' layers in one legend would hide the curves).
  size_t statsRun = 0;
  while (statsRun < runs.size() && fp8[statsRun].layers.empty())
    ++statsRun;
  auto plotFp8 = [&](const std::string &title, const char *ylabel, int column,
                     bool logscale) {
    gp << "set title " << quoted(title + " (" + names[statsRun] + ")")
       << "\nset ylabel '" << ylabel << "'\n"
       << (logscale ? "set logscale y\n" : "unset logscale y\n")
       << "set key outside right top vertical font ',7'\nplot ";
    const Fp8Series &series = fp8[statsRun];
    for (size_t l = 0; l < series.layers.size(); ++l)
      gp << (l ? ", " : "")
         << quoted((dir / (std::to_string(statsRun) + ".fp8." +
                           std::to_string(l))).string())
         << " using 1:" << column << " with linespoints lw 1 pt 7 ps 0.5 title "
         << quoted(series.layers[l]);
    gp << "\nset key outside bottom center horizontal font ',10'\n";
  };
  if (anyFp8) {
    plotFp8("FP8: amax of the forward GEMM input, per layer", "amax", 2, true);
    plotFp8("FP8: underflow to zero, worst cast of each layer", "% of values", 3,
            false);
  }
  gp << "unset multiplot\n";
  fs::path script = dir / "plot.gp";
  std::ofstream(script) << gp.str();

  std::string command = "gnuplot " + quoted(script.string()) + " 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  std::string messages;
  char buffer[256];
  while (pipe && std::fgets(buffer, sizeof(buffer), pipe))
    messages += buffer;
  int status = pipe ? pclose(pipe) : -1;
  if (status != 0 || !fs::exists(tmpPng)) {
    std::error_code ec;
    fs::remove(tmpPng, ec);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      throw std::runtime_error("plot needs gnuplot on PATH: install gnuplot-nox "
                               "(tools/setup.sh does)");
    throw std::runtime_error("gnuplot failed to draw " + output + ": " + messages);
  }
  fs::rename(tmpPng, output);
}

} // namespace gptrt::train
