// `ppsim sweep` (metrics over a grid of shapes) and `ppsim check` (CI regression of bubble
// metrics against a committed baseline).
//
//   ppsim sweep -s 1f1b,zb-h1,zb-h2 -p 4 -m 8,16,32,64 --csv
//   ppsim check --baseline data/baselines/known-answers.json
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/baseline_file.hpp"
#include "ppsim/io/json_text.hpp"
#include "ppsim/io/launcher_env.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/run/check.hpp"
#include "ppsim/run/sweep.hpp"
#include "ppsim/sim/cores.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/viz/check.hpp"
#include "ppsim/viz/sweep.hpp"

#include <limits>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <thread>
#include <ostream>

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
  std::string svg;
  unsigned threads{0};
};

} // namespace

Workers shared_workers(unsigned threads, std::unique_ptr<PointExchange>& exchange) {
  Workers workers{.threads = threads, .exchange = nullptr};
  if (!launched_as_several_ranks()) return workers;
  // runs_on_ranks brought this command line to ppsim-full, which links MPI.
  if (full_parts().point_exchange == nullptr)
    throw std::logic_error("a command on several ranks needs ppsim-full (Open MPI)");
  exchange = full_parts().point_exchange();
  workers.exchange = exchange.get();
  // A host's cores are shared by its ranks: the cores this rank may use (mpirun's binding), at
  // most the host's over its ranks, unless --threads says.
  const auto here = launcher_rank();
  const unsigned local = here && here->local_size > 0 ? static_cast<unsigned>(here->local_size) : 1;
  if (threads == 0)
    workers.threads = std::max(
        1u, std::min(usable_cores(), std::max(1u, std::thread::hardware_concurrency()) / local));
  return workers;
}

namespace {

int run_sweep(const SweepOptions& o, Io io) {
  SweepGrid grid;
  grid.schedules = split_list(o.schedules, "--schedule");
  grid.devices = int_list(o.stages, "--stages");
  grid.microbatches = int_list(o.microbatches, "--microbatches");
  // A shape a generator refuses is a rejected point; a negative chunk count is no shape at all.
  if (!o.chunks.empty()) grid.chunks = int_list(o.chunks, "--chunks", 0, limits::kMaxDevices);
  if (!o.mem_limits.empty()) {
    grid.mem_limits.clear();
    for (const std::string& text : split_list(o.mem_limits, "--mem-limit"))
      grid.mem_limits.push_back(parse_mem_limit(text));
  }
  const RunRequest base = to_request(o.run, "", resolve_costs(o.run, io));
  // Under mpirun the ranks share the points; rank 0 writes, the others write nothing.
  std::unique_ptr<PointExchange> exchange;
  const Workers workers = shared_workers(o.threads, exchange);
  const std::vector<SweepPoint> points = run_sweep(grid, base, &io.progress, workers);
  if (exchange && exchange->rank() != 0) return kExitOk;
  if (!o.html.empty())
    write_file_atomically(o.html, [&](std::ostream& f) {
      write_sweep_html(f, points, base.costs.source);
    });
  if (!o.svg.empty())
    write_file_atomically(o.svg, [&](std::ostream& f) { write_sweep_svg(f, points); });
  io.progress.finish();
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
  bool init{false};
  bool json{false};
  std::vector<std::string> cases;  ///< --case "-s zb-h1 -p 4 -m 8 --costs F=1,B=1,W=1"
};

// A --case text as a baseline case: the options of `simulate` that a case records.
BaselineCase parse_case_text(const std::string& text) {
  CLI::App parser{"case"};
  BaselineCase c;
  parser.add_option("-s,--schedule", c.schedule)->required();
  parser.add_option("-p,--stages", c.devices);
  parser.add_option("-m,--microbatches", c.microbatches);
  parser.add_option("-v,--chunks", c.chunks);
  parser.add_option("--slices", c.slices);
  parser.add_option("--costs", c.costs);
  parser.add_option("--costs-file", c.costs_file);
  parser.add_option("--mem-limit", c.mem_limit);
  parser.add_option("--name", c.name);
  std::vector<std::string> args;
  for_each_field(text, ' ', [&](std::string_view w) {
    if (!w.empty()) args.emplace_back(w);
    return true;
  });
  std::reverse(args.begin(), args.end());
  try {
    parser.parse(args);
  } catch (const CLI::ParseError& e) {
    throw ConfigError(fmt::format("--case '{}': {} (a case is simulate's -s, -p, -m, -v, "
                                  "--slices, --costs, --costs-file, --mem-limit and --name)",
                                  text, e.what()));
  }
  if (c.name.empty()) c.name = default_case_name(c);
  if (c.name.size() > limits::kMaxNameChars)
    throw ConfigError(fmt::format("--case '{}': the case's name has {} characters (a name has at "
                                  "most {}): give it a shorter --name",
                                  excerpt(text), c.name.size(), limits::kMaxNameChars));
  return c;
}

// The starter set of `check --init`: the known answers of DESIGN.md's toy case and one case
// with the zero-bubble paper's costs for the automatic schedules.
std::vector<BaselineCase> starter_cases() {
  std::vector<BaselineCase> cases;
  for (const char* s : {"1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p", "zb-v", "interleaved-1f1b"})
    cases.push_back(parse_case_text(fmt::format("-s {} -p 4 -m 8 --costs F=2,B=2,W=2", s)));
  for (const char* s : {"zb-auto", "zb-v"})
    cases.push_back(parse_case_text(fmt::format(
        "-s {} -p 8 -m 24 --costs F=1.5,B=1.5,W=1,comm=0.15 --mem-limit 1.5p", s)));
  return cases;
}

std::string diff_text(double expected, double got) {
  const double d = got - expected;
  if (d == 0) return "0";
  const auto signed_text = [](double x) { return (x < 0 ? "" : "+") + human_number(x); };
  std::string s = signed_text(d);
  if (expected != 0) s += fmt::format(" ({}%)", signed_text(100 * d / std::abs(expected)));
  return s;
}

// The baseline to check: the file, or for --init / --update with --case a new one.
Baseline baseline_of(const CheckOptions& o) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(o.baseline, ec);
  if (o.init || (!exists && !o.cases.empty())) {
    if (exists)
      throw ConfigError(fmt::format("{}: already exists; --init creates a new baseline (use "
                                    "--update to re-approve this one)",
                                    o.baseline));
    if (!o.update && !o.init)
      throw ConfigError(fmt::format("{}: no such baseline; --case with --update creates it",
                                    o.baseline));
    Baseline b;
    b.description = o.init ? "ppsim check --init: the toy case's known answers and the "
                             "automatic schedules at the zero-bubble paper's costs"
                           : "ppsim check --update --case ...";
    b.cases = o.cases.empty() ? starter_cases() : std::vector<BaselineCase>{};
    for (const std::string& text : o.cases) b.cases.push_back(parse_case_text(text));
    return b;
  }
  if (!exists && !std::filesystem::is_symlink(o.baseline, ec))
    throw ConfigError(fmt::format("{}: no such baseline file; create one with 'ppsim check "
                                  "--baseline {} --init' (a starter set) or --init --case ...",
                                  excerpt(o.baseline, 240), excerpt(o.baseline, 240)));
  Baseline b = load_baseline_file(o.baseline, !o.update);
  for (const std::string& text : o.cases) {
    if (!o.update) throw ConfigError("--case: adds cases to a baseline with --update");
    b.cases.push_back(parse_case_text(text));
  }
  return b;
}

int run_check(const CheckOptions& o, Io io) {
  const Baseline baseline = baseline_of(o);
  const bool update = o.update || o.init;
  const CheckResult result = check_baseline(
      baseline, o.baseline, o.tolerance_given ? std::optional<double>(o.tolerance) : std::nullopt);
  io.progress.finish();

  if (o.json) {
    // One document on stdout; the exit code as without --json.
    if (update)
      write_file_atomically(o.baseline,
                            [&](std::ostream& f) { f << baseline_json(result.updated); });
    io.out << check_json(result, o.baseline, update) << "\n";
    if (update) return kExitOk;
    const ChangeCount n = count_changes(result);
    return n.worse > 0 || (n.better > 0 && !o.allow_improvements) ? kExitRegression : kExitOk;
  }
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
        if (update)
          io.out << fmt::format(fmt::runtime(row), c.name, m.metric, "-", human_number(m.got), "",
                                "new");
        continue;
      }
      std::string status = "ok";
      if (m.change != Change::same) {
        const std::string what = fmt::format("{} {} -> {}", m.metric, json_number(*m.expected),
                                             json_number(m.got));
        std::string& list = m.change == Change::worse ? worse_text : better_text;
        list += (list.empty() ? "" : ", ") + what;
        status = update ? "updated" : m.change == Change::worse ? "WORSE" : "BETTER";
      }
      // NOTE: the table rounds for reading; the diff column shows any change, however small,
      // and the messages below keep the exact values (the baseline file's numbers).
      io.out << fmt::format(fmt::runtime(row), c.name, m.metric, human_number(*m.expected),
                            human_number(m.got), diff_text(*m.expected, m.got), status);
    }
    if (c.changed()) ++changed_cases;
    if (!worse_text.empty()) worse.push_back(fmt::format("'{}': {}", c.name, worse_text));
    if (!better_text.empty()) better.push_back(fmt::format("'{}': {}", c.name, better_text));
  }

  if (update) {
    write_file_atomically(o.baseline,
                          [&](std::ostream& f) { f << baseline_json(result.updated); });
    io.out << fmt::format("{} {}: {} cases, {} changed\n", o.init ? "created" : "updated",
                          o.baseline, baseline.cases.size(), changed_cases);
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

void add_threads_option(CLI::App& command, unsigned& threads, std::string_view items) {
  command
      .add_option("--threads", threads,
                  fmt::format("threads that run {} (default 0: one per core; under mpirun, "
                              "the host's cores over its ranks); the output is the same for any "
                              "count",
                              items))
      ->check(CLI::Range(0u, static_cast<unsigned>(limits::kMaxThreads)));
}

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
  // The workload options of every command that runs schedules (simulate's), but the shape.
  add_cost_options(*sweep, so->run);
  add_comm_options(*sweep, so->run);
  add_model_options(*sweep, so->run);
  add_slice_options(*sweep, so->run);
  add_iteration_options(*sweep, so->run);
  auto* csv = sweep->add_flag("--csv", so->csv, "print CSV (one row per point) instead of a table");
  auto* json = sweep->add_flag("--json", so->json, "print JSON (schema ppsim.sweep/1)");
  csv->excludes(json);
  sweep->add_option("--html", so->html,
                    "write an HTML page with bubble-vs-m and bubble-vs-memory curves to FILE");
  sweep->add_option("--svg", so->svg, "write the two charts as one standalone SVG picture");
  add_threads_option(*sweep, so->threads, "points");
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
  check->add_flag("--init", co->init,
                  "create the baseline (it must not exist) from a starter set, or from --case");
  check->add_option("--case", co->cases,
                    "a case to add (with --update or --init): simulate's options, e.g. "
                    "\"-s zb-h1 -p 4 -m 8 --costs F=1,B=1,W=1\" (repeatable)");
  check->add_flag("--json", co->json, "print the outcome as JSON (schema ppsim.check/1)");
  check->callback([io, &action, co, tolerance] {
    co->tolerance_given = tolerance->count() > 0;
    action = [io, co] { return run_check(*co, io); };
  });
}

} // namespace ppsim::cli
