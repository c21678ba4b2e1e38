// `ppsim check`: re-simulates the cases of a baseline file and compares each recorded metric
// with what the simulator gives now.
#pragma once

#include "ppsim/io/baseline_file.hpp"
#include "ppsim/run/request.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ppsim {

/// One metric of one case.
struct MetricCheck {
  std::string metric;
  std::optional<double> expected;  ///< absent when the case has no value for it yet
  double got{0};
  Change change{Change::same};  ///< `same` when there is nothing to compare
};

struct CaseCheck {
  std::string name;
  std::vector<MetricCheck> metrics;  ///< baseline_metric_names() order
  [[nodiscard]] bool changed() const;
};

struct CheckResult {
  double tolerance{0};
  std::size_t metrics_compared{0};  ///< metrics that had an expected value
  std::vector<CaseCheck> cases;
  /// The baseline with every case's expected metrics replaced by what it gave (--update).
  Baseline updated;
};

/// Metrics that had an expected value and got worse, and those that got better.
struct ChangeCount {
  std::size_t worse{0};
  std::size_t better{0};
};
[[nodiscard]] ChangeCount count_changes(const CheckResult& result);

/// The request of one case: a schedule file is relative to the baseline file's folder, so is
/// its cost file; costs are the cost file's, then the case's `costs` on top.
[[nodiscard]] RunRequest case_request(const std::string& baseline_path, const BaselineCase& c);

/// Runs every case. `tolerance` overrides the file's (default default_baseline_tolerance).
/// A case's error keeps its type (and so its exit code) and gains the case's name.
[[nodiscard]] CheckResult check_baseline(const Baseline& baseline, const std::string& path,
                                         std::optional<double> tolerance);

} // namespace ppsim
