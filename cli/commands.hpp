// Shared plumbing of the ppsim subcommands (private to cli/): the shared options, their
// translation into a RunRequest, and the registration functions of each command file.
#pragma once

#include "run/request.hpp"
#include "sim/cost_model.hpp"
#include "sim/run.hpp"

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace ppsim::cli {

/// Where a command writes.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

/// What the chosen subcommand does once parsing succeeded; returns the exit code. Errors are
/// thrown (ppsim::Error subclasses) and mapped to exit codes by run_cli.
using Action = std::function<int()>;

/// The options every schedule-running command shares (-s -p -m -v --costs --costs-file
/// --calibrate --mem-limit), as typed.
struct RunOptions {
  std::string schedules;  ///< a name, a comma list of names, or a schedule file
  std::optional<int> devices;       ///< -p
  std::optional<int> microbatches;  ///< -m
  int chunks{0};
  std::string costs;
  std::string costs_file;
  std::string calibrate;
  std::string mem_limit;
  std::string model;             ///< --model NAME|FILE
  std::string device;            ///< --device NAME|FILE|cpu
  std::string layout;            ///< --layout (Megatron's syntax)
  std::string layers_per_stage;  ///< --layers-per-stage 5,6,6,5
  int dp{1};                     ///< --dp
  int zero{0};                   ///< --zero 0|1
  int tp{1};                     ///< --tp
  std::string mem_capacity;      ///< --mem-capacity 80GiB
  int iterations{1};           ///< --iterations K
  std::string optimizer_step;  ///< --optimizer-step MS (decimal ms); empty = 0
  std::string sync{"allreduce"};  ///< --sync allreduce|post-validation
};

/// Adds --model, --device, --layout, --layers-per-stage, --dp, --zero and --mem-capacity.
void add_model_options(CLI::App& cmd, RunOptions& options);

/// The workload of --model/--device, or nullopt without --model (--device alone is an error).
[[nodiscard]] std::optional<WorkloadSpec> resolve_workload(const RunOptions& options);

/// Adds the shared options to `cmd`. With `require_shape` false, -p and -m may be omitted (for a
/// schedule file, which carries its own shape).
void add_run_options(CLI::App& cmd, RunOptions& options, bool require_shape = true);

/// The cost spec: the cost file (or a calibration) first, then --costs overrides on top.
[[nodiscard]] CostSpec resolve_costs(const RunOptions& options);

/// The request for one schedule of the options, with costs already resolved.
[[nodiscard]] RunRequest to_request(const RunOptions& options, const std::string& schedule,
                                    const CostSpec& costs);

/// ConfigError `--costs: empty value` for an option of `cmd` given as "" (flags are exempt).
void reject_empty_values(const CLI::App& cmd);

/// Splits `a,b,c` (empty items rejected with ConfigError naming `what`).
[[nodiscard]] std::vector<std::string> split_list(const std::string& text, std::string_view what);

/// `out/trace.json` for schedule `zb-h1` among several -> `out/trace-zb-h1.json`.
[[nodiscard]] std::string path_for(const std::string& path, const std::string& name, bool many);

// Registration of the command files (each defines one of these).
void add_core_commands(CLI::App& app, Io io, Action& action);  // list, simulate, compare
void add_calibrate_command(CLI::App& app, Io io, Action& action);  // calibrate_cmd.cpp
void add_report_commands(CLI::App& app, Io io, Action& action);  // report_cmds.cpp: sweep, check
void add_schedule_commands(CLI::App& app, Io io, Action& action);  // schedule_cmds.cpp: validate, export
void add_execute_command(CLI::App& app, Io io, Action& action);  // execute_cmd.cpp: MPI ranks
void add_help_commands(CLI::App& app, Io io, Action& action);  // help_docs.cpp: man, completion
void add_model_commands(CLI::App& app, Io io, Action& action);  // model_cmds.cpp: models, costs, plan
}  // namespace ppsim::cli
