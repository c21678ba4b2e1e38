// Running the cases of a baseline and comparing their metrics.
#include "ppsim/run/check.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>

namespace ppsim {

namespace {

namespace fs = std::filesystem;

// A path of the baseline file, relative to the file's folder.
std::string beside(const std::string& baseline, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute()) return path;
  return (fs::path(baseline).parent_path() / p).lexically_normal().string();
}

Run run_case(const std::string& file, const BaselineCase& c) {
  return with_context(fmt::format("{}: case '{}'", file, excerpt(c.name)),
                      [&] { return run_request(case_request(file, c)); });
}

} // namespace

bool CaseCheck::changed() const {
  for (const MetricCheck& m : metrics)
    if (m.change != Change::same) return true;
  return false;
}

ChangeCount count_changes(const CheckResult& result) {
  ChangeCount n;
  for (const CaseCheck& c : result.cases)
    for (const MetricCheck& m : c.metrics) {
      n.worse += m.expected && m.change == Change::worse;
      n.better += m.expected && m.change == Change::better;
    }
  return n;
}

RunRequest case_request(const std::string& file, const BaselineCase& c) {
  RunRequest rq;
  rq.schedule = is_schedule_file(c.schedule) ? beside(file, c.schedule) : c.schedule;
  if (c.devices > 0) rq.devices = c.devices;
  if (c.microbatches > 0) rq.microbatches = c.microbatches;
  rq.chunks = c.chunks;
  rq.slices = c.slices;
  if (!c.costs_file.empty()) rq.costs = load_cost_file(beside(file, c.costs_file));
  if (!c.costs.empty()) apply_costs(rq.costs, c.costs);
  rq.mem_limit = parse_mem_limit(c.mem_limit);
  return rq;
}

CheckResult check_baseline(const Baseline& baseline, const std::string& path,
                           std::optional<double> tolerance) {
  if (tolerance && (!std::isfinite(*tolerance) || *tolerance < 0))
    throw ConfigError(fmt::format("--tolerance {}: must be a finite number >= 0", *tolerance));
  for (std::size_t i = 0; i < baseline.cases.size(); ++i) {
    const std::string& name = baseline.cases[i].schedule;
    if (!is_schedule_file(name) && find_schedule(name) == nullptr)
      throw unknown_schedule(name, fmt::format("{}: /cases/{}/schedule", path, i));
  }
  CheckResult result;
  result.tolerance = tolerance              ? *tolerance
                     : baseline.tolerance >= 0 ? baseline.tolerance
                                               : default_baseline_tolerance;
  result.updated = baseline;
  for (BaselineCase& c : result.updated.cases) {
    const Run run = run_case(path, c);
    CaseCheck cc;
    cc.name = c.name;
    std::vector<std::pair<std::string, double>> got;
    for (const std::string& name : baseline_metric_names()) {
      MetricCheck mc;
      mc.metric = name;
      mc.got = baseline_metric(run.metrics, name);
      got.emplace_back(name, mc.got);
      for (const auto& e : c.expected)
        if (e.first == name) mc.expected = e.second;
      if (mc.expected) {
        ++result.metrics_compared;
        mc.change = compare_metric(*mc.expected, mc.got, result.tolerance);
      }
      cc.metrics.push_back(std::move(mc));
    }
    c.expected = std::move(got);
    result.cases.push_back(std::move(cc));
  }
  return result;
}

} // namespace ppsim
