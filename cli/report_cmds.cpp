// `ppsim sweep` (metrics over a grid of shapes) and `ppsim check` (CI regression of bubble
// metrics against a committed baseline).
//
//   ppsim sweep -s 1f1b,zb-h1,zb-h2 -p 4 -m 8,16,32,64 --csv
//   ppsim check --baseline data/baselines/known-answers.json
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "io/atomic_file.hpp"
#include "io/baseline_file.hpp"
#include "io/json_text.hpp"
#include "io/schedule_file.hpp"
#include "io/text_parse.hpp"
#include "run/check.hpp"
#include "run/sweep.hpp"
#include "sim/errors.hpp"
#include "sim/limits.hpp"
#include "viz/sweep.hpp"

#include <limits>
#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <ostream>
#include <unistd.h>

namespace ppsim::cli {

namespace {

std::vector<int> int_list(const std::string& text, std::string_view what,
                          long long lo = std::numeric_limits<int>::min(),
                          long long hi = std::numeric_limits<int>::max()) {
  std::vector<int> values;
  for (const std::string& item : split_list(text, what))
    values.push_back(
        static_cast<int>(parse_integer(item, fmt::format("{} '{}'", what, excerpt(text)), lo, hi)));
  return values;
}

// ------------------------------------------------------------------------------------------
// sweep

struct SweepOptions {
  std::string schedules;
  std::string stages;
  std::string microbatches;
  std::string chunks;
  std::string mem_limits;
  RunOptions run;  // costs, cost file, calibration
  bool csv{false};
  bool json{false};
  std::string html;
};

int run_sweep(const SweepOptions& o, Io io) {
  SweepGrid grid;
  grid.schedules = split_list(o.schedules, "--schedule");
  grid.devices = int_list(o.stages, "--stages");
  grid.microbatches = int_list(o.microbatches, "--microbatches");
  // A shape a generator refuses is a rejected point; a negative chunk count is no shape at all.
  if (!o.chunks.empty()) grid.chunks = int_list(o.chunks, "--chunks", 0, limits::kMaxDevices);
  if (!o.mem_limits.empty()) grid.mem_limits = split_list(o.mem_limits, "--mem-limit");
  const RunRequest base = to_request(o.run, "", resolve_costs(o.run));
  // Progress on a terminal only: `\r` lines would litter a log or a pipe.
  SweepProgress progress;
  if (io.err.rdbuf() == std::cerr.rdbuf() && ::isatty(STDERR_FILENO) == 1)
    progress = [&io, shown = ~std::size_t{0}](std::size_t done, std::size_t total) mutable {
      const std::size_t percent = 100 * done / total;
      if (done != total && percent == shown) return;
      shown = percent;
      io.err << fmt::format("\rsweep: {}/{} points ({}%)", done, total, percent)
             << (done == total ? "\n" : "") << std::flush;
    };
  const std::vector<SweepPoint> points = run_sweep(grid, base, progress);
  if (!o.html.empty())
    write_file_atomically(o.html, [&](std::ostream& f) {
      write_sweep_html(f, points, base.costs.source);
    });
  if (o.json) io.out << sweep_json(points) << "\n";
  else if (o.csv) write_sweep_csv(io.out, points);
  else write_sweep_table(io.out, points);
  return kExitOk;
}

// ------------------------------------------------------------------------------------------
// check

struct CheckOptions {
  std::string baseline;
  double tolerance{-1};
  bool tolerance_given{false};
  bool update{false};
  bool allow_improvements{false};
};

std::string diff_text(double expected, double got) {
  const double d = got - expected;
  if (d == 0) return "0";
  std::string s = fmt::format("{:+.3g}", d);
  if (expected != 0) s += fmt::format(" ({:+.3g}%)", 100 * d / std::abs(expected));
  return s;
}

int run_check(const CheckOptions& o, Io io) {
  const Baseline baseline = load_baseline_file(o.baseline, !o.update);
  const CheckResult result = check_baseline(
      baseline, o.baseline, o.tolerance_given ? std::optional<double>(o.tolerance) : std::nullopt);

  std::size_t name_w = 4;
  for (const BaselineCase& c : baseline.cases) name_w = std::max(name_w, c.name.size());
  const std::string row = fmt::format("{{:<{}}}  {{:<12}} {{:>22}} {{:>22}}  {{:<20}} {{}}\n",
                                      name_w);
  io.out << fmt::format(fmt::runtime(row), "case", "metric", "expected", "got", "diff", "status");

  std::vector<std::string> worse, better;
  std::size_t changed_cases = 0;
  for (const CaseCheck& c : result.cases) {
    std::string worse_text, better_text;
    for (const MetricCheck& m : c.metrics) {
      if (!m.expected) {
        if (o.update)
          io.out << fmt::format(fmt::runtime(row), c.name, m.metric, "-", json_number(m.got), "",
                                "new");
        continue;
      }
      std::string status = "ok";
      if (m.change != Change::same) {
        const std::string what = fmt::format("{} {} -> {}", m.metric, json_number(*m.expected),
                                             json_number(m.got));
        std::string& list = m.change == Change::worse ? worse_text : better_text;
        list += (list.empty() ? "" : ", ") + what;
        status = o.update ? "updated" : m.change == Change::worse ? "WORSE" : "BETTER";
      }
      io.out << fmt::format(fmt::runtime(row), c.name, m.metric, json_number(*m.expected),
                            json_number(m.got), diff_text(*m.expected, m.got), status);
    }
    if (c.changed()) ++changed_cases;
    if (!worse_text.empty()) worse.push_back(fmt::format("'{}': {}", c.name, worse_text));
    if (!better_text.empty()) better.push_back(fmt::format("'{}': {}", c.name, better_text));
  }

  if (o.update) {
    write_file_atomically(o.baseline,
                          [&](std::ostream& f) { f << baseline_json(result.updated); });
    io.out << fmt::format("updated {}: {} cases, {} changed\n", o.baseline, baseline.cases.size(),
                          changed_cases);
    return kExitOk;
  }
  io.out << fmt::format("{}: {} cases, {} metrics, tolerance {} (relative to max(|expected|, 1)): "
                        "{}\n",
                        o.baseline, baseline.cases.size(), result.metrics_compared,
                        result.tolerance,
                        changed_cases == 0 ? "all within tolerance"
                                           : fmt::format("{} cases changed", changed_cases));
  for (const auto& w : worse) io.err << "ppsim: error: check: regression in case " << w << "\n";
  for (const auto& b : better)
    io.err << (o.allow_improvements ? "ppsim: warning: check: improvement in case "
                                    : "ppsim: error: check: changed (better) in case ")
           << b << "\n";
  if (!better.empty())
    io.err << fmt::format("re-approve with `ppsim check --baseline {} --update` and review the "
                          "diff{}\n",
                          o.baseline,
                          o.allow_improvements ? "" : " (or pass --allow-improvements)");
  if (!worse.empty() || (!better.empty() && !o.allow_improvements)) return kExitRegression;
  return kExitOk;
}

} // namespace

void add_report_commands(CLI::App& app, Io io, Action& action) {
  // sweep
  auto so = std::make_shared<SweepOptions>();
  auto* sweep = app.add_subcommand(
      "sweep", "bubble rate, cost and peak memory over a grid of shapes and memory limits");
  sweep->add_option("-s,--schedule", so->schedules, "schedule names (or files), comma-separated")
      ->required();
  sweep->add_option("-p,--stages", so->stages, "pipeline devices, comma-separated: 4,8")
      ->required();
  sweep->add_option("-m,--microbatches", so->microbatches,
                    "micro-batches, comma-separated: 8,16,32,64")
      ->required();
  sweep->add_option("-v,--chunks", so->chunks, "stages per device, comma-separated (default per "
                                               "schedule)");
  sweep->add_option("--mem-limit", so->mem_limits,
                    "memory limits, comma-separated: 1p,1.5p,2p (K*p*M_B), 12 (M_B) or 3GiB");
  sweep->add_option("--costs", so->run.costs,
                    "costs per device-stage: F=1,B=1,W=1,BW=..,FB=..,comm=0 (ms),MB=1,MW=0.5");
  sweep->add_option("--costs-file", so->run.costs_file, "a ppsim.costs/1 cost file");
  sweep->add_option("--calibrate", so->run.calibrate,
                    "calibrate on this CPU first: dim=..,tokens=..,blocks=..[,threads=..]");
  auto* csv = sweep->add_flag("--csv", so->csv, "print CSV (one row per point) instead of a table");
  auto* json = sweep->add_flag("--json", so->json, "print JSON (schema ppsim.sweep/1)");
  csv->excludes(json);
  sweep->add_option("--html", so->html,
                    "write an HTML page with bubble-vs-m and bubble-vs-memory curves to FILE");
  sweep->callback([io, &action, so] { action = [io, so] { return run_sweep(*so, io); }; });

  // check
  auto co = std::make_shared<CheckOptions>();
  auto* check = app.add_subcommand(
      "check", "re-simulate the cases of a baseline file and fail (exit 1) on any change");
  check->add_option("--baseline", co->baseline, "a ppsim.baseline/1 file (data/baselines/*.json)")
      ->required();
  auto* tolerance = check->add_option("--tolerance", co->tolerance,
                                      "relative tolerance (default: the file's, else 1e-9)");
  check->add_flag("--update", co->update,
                  "re-simulate and rewrite the expected metrics (atomically)");
  check->add_flag("--allow-improvements", co->allow_improvements,
                  "let metrics that got better pass (with a warning)");
  check->callback([io, &action, co, tolerance] {
    co->tolerance_given = tolerance->count() > 0;
    action = [io, co] { return run_check(*co, io); };
  });
}

} // namespace ppsim::cli
