// gptrun --profile-step's table and JSON (see Profile.h).
#include "runtime/train/Profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace gptrt {

std::vector<ProfileRow>
summariseProfile(const std::vector<Context::ProfiledCall> &calls) {
  std::map<std::string, ProfileRow> byName;
  for (const Context::ProfiledCall &call : calls) {
    ProfileRow &row = byName[call.name];
    row.function = call.name;
    ++row.calls;
    row.ms += call.ms;
  }
  std::vector<ProfileRow> rows;
  for (auto &[name, row] : byName)
    rows.push_back(row);
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const ProfileRow &a, const ProfileRow &b) { return a.ms > b.ms; });
  return rows;
}

std::string profileTable(const std::vector<ProfileRow> &rows, int64_t step,
                         bool onGpu, size_t top) {
  double total = 0;
  int64_t calls = 0;
  for (const ProfileRow &row : rows) {
    total += row.ms;
    calls += row.calls;
  }
  std::ostringstream out;
  char line[160];
  std::snprintf(
      line, sizeof line,
      "profile of step %lld: %lld runtime calls, %.3f ms timed (%s)\n",
      static_cast<long long>(step), static_cast<long long>(calls), total,
      onGpu ? "CUDA events around each call on the stream, graphs "
              "off: kernel time, plus any wait for the host"
            : "host clock around each call");
  out << line;
  std::snprintf(line, sizeof line, "  %-44s %7s %11s %7s\n", "function",
                "calls", "ms", "share");
  out << line;
  double restMs = 0;
  int64_t restCalls = 0, restFunctions = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ProfileRow &row = rows[i];
    if (i >= top) {
      restMs += row.ms;
      restCalls += row.calls;
      ++restFunctions;
      continue;
    }
    std::snprintf(line, sizeof line, "  %-44s %7lld %11.3f %6.1f%%\n",
                  row.function.c_str(), static_cast<long long>(row.calls),
                  row.ms, total > 0 ? 100 * row.ms / total : 0.0);
    out << line;
  }
  if (restFunctions > 0) {
    std::snprintf(
        line, sizeof line, "  %-44s %7lld %11.3f %6.1f%%\n",
        ("(" + std::to_string(restFunctions) + " more functions)").c_str(),
        static_cast<long long>(restCalls), restMs,
        total > 0 ? 100 * restMs / total : 0.0);
    out << line;
  }
  return out.str();
}

std::string profileJson(const std::vector<ProfileRow> &rows) {
  std::ostringstream out;
  out.precision(6);
  out << "[";
  for (size_t i = 0; i < rows.size(); ++i)
    out << (i ? ", " : "") << "{\"function\": \"" << rows[i].function
        << "\", \"calls\": " << rows[i].calls << ", \"ms\": " << rows[i].ms
        << "}";
  out << "]";
  return out.str();
}

} // namespace gptrt
