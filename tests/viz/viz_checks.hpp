// Helpers shared by the drawing and report tests: a simulated run, text lines, approved goldens.
#pragma once

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/run.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <ios>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim::test {

/// Schedule `name` generated for p devices and m micro-batches, simulated under `costs`
/// (the text form of parse_costs, e.g. "F=1,B=1,W=1").
[[nodiscard]] inline Run make_run(std::string_view name, int p, int m, std::string_view costs) {
  return run_schedule(make_schedule(name, {.devices = p, .microbatches = m}), parse_costs(costs));
}

/// The lines of `text`, without their line ends.
[[nodiscard]] inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// How many times `what` occurs in `text`, overlapping occurrences included.
[[nodiscard]] inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

/// Checks that `text` equals the approved golden file at `relative_path` in the source tree
/// (e.g. "data/golden/ascii_zb_h1_p4_m8.txt"). With PPSIM_APPROVE=1 in the environment it first
/// writes `text` there, approving it.
inline void check_golden(const std::string& relative_path, const std::string& text) {
  const std::string path = std::string(PPSIM_SOURCE_DIR) + "/" + relative_path;
  const char* approve = std::getenv("PPSIM_APPROVE");
  if (approve != nullptr && std::string(approve) == "1") {
    std::ofstream(path, std::ios::binary) << text;
    WARN("approved " << path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("missing golden file " << path << " (approve with PPSIM_APPROVE=1)");
  std::ostringstream golden;
  golden << in.rdbuf();
  CHECK(text == golden.str());
}

} // namespace ppsim::test
