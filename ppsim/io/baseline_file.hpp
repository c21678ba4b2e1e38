// CI baselines of bubble metrics (`ppsim.baseline/1`, data/baselines/README.md): the cases, their
// expected metrics, reading and writing the file, and comparing a metric against tolerance.
#pragma once

#include "ppsim/sim/metrics.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppsim {

/// One case: what to simulate (as on the command line) and what it gave when approved.
struct BaselineCase {
  std::string name;        ///< unique in the file; defaults to a description of the case
  std::string schedule;    ///< a schedule name, or a schedule file relative to the baseline
  int devices{0};          ///< p; 0 only for a schedule file
  int microbatches{0};     ///< m; 0 only for a schedule file
  int chunks{0};           ///< v; 0 = the schedule's default
  int slices{1};           ///< sequence slices per micro-batch (`--slices`, seq1f1b)
  std::string costs;       ///< `--costs` text, applied on top of costs_file
  std::string costs_file;  ///< a ppsim.costs/1 file relative to the baseline file
  std::string mem_limit;   ///< `--mem-limit` text (`2p`, `12`, `3GiB`); "" = none
  /// (metric, value) in baseline_metric_names() order; empty until approved with --update.
  std::vector<std::pair<std::string, double>> expected;
};

struct Baseline {
  std::string description;
  double tolerance{-1};  ///< the file's default relative tolerance; < 0 = not given
  std::vector<BaselineCase> cases;
};

/// A case's name when it has none: `zb-h1 p=4 m=8 mem=2p costs=F=1`.
[[nodiscard]] std::string default_case_name(const BaselineCase& c);

/// The metrics a baseline records, in file order: bubble_rate, cost_ms, ideal_ms, makespan_ms,
/// peak_memory.
[[nodiscard]] const std::vector<std::string>& baseline_metric_names();
/// bubble_rate, cost_ms and peak_memory must be present in every approved case.
[[nodiscard]] bool baseline_required_metric(std::string_view name);
/// The value of a named metric (ms for the *_ms ones, M_B for peak_memory).
[[nodiscard]] double baseline_metric(const Metrics& metrics, std::string_view name);

/// The default relative tolerance: simulator results are exact, so only printing noise.
inline constexpr double default_baseline_tolerance = 1e-9;

/// Parses a `ppsim.baseline/1` document. With `require_expected`, every case must carry its
/// expected metrics (check); without, cases may lack them (--update fills them in). Errors are
/// ConfigError `where: /cases/3/p: expected an integer ...`; unknown keys and duplicate case names
/// are errors.
[[nodiscard]] Baseline parse_baseline_json(std::string_view json, std::string_view where,
                                           bool require_expected);
[[nodiscard]] Baseline load_baseline_file(const std::string& path, bool require_expected);

/// The document text (2-space indent, fixed key order, values that round-trip exactly).
[[nodiscard]] std::string baseline_json(const Baseline& baseline);

/// How a got value compares with an expected one. Every recorded metric is lower-is-better.
enum class Change { same, worse, better };

/// `same` when |got - expected| <= tolerance * max(|expected|, 1): relative for values of 1 and
/// more, absolute below (a bubble rate of 0 has no relative scale).
[[nodiscard]] Change compare_metric(double expected, double got, double tolerance);

} // namespace ppsim
