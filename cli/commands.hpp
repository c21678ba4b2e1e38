// Shared plumbing of the ppsim subcommands (private to cli/): the shared options, their
// translation into a RunRequest, and the registration functions of each command file.
#pragma once

#include "cli/progress.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/run/shared_work.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/run.hpp"

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim::cli {

/// Where a command writes. A long command calls progress.finish() before it prints results or
/// warnings, so that the progress line is gone first.
struct Io {
  std::ostream& out;
  std::ostream& err;
  ProgressReporter& progress;
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
  std::string comm_mode{"async"};  ///< --comm-mode async|blocking
  std::string link;                ///< --link latency=MS,bandwidth=GB/s,contention=...
  std::string model;             ///< --model NAME|FILE
  std::string device;            ///< --device NAME|FILE|cpu
  std::string layout;            ///< --layout (Megatron's syntax)
  std::string layers_per_stage;  ///< --layers-per-stage 5,6,6,5
  int dp{1};                     ///< --dp
  int zero{0};                   ///< --zero 0|1
  int tp{1};                     ///< --tp
  std::string sequence_parallel;  ///< --sequence-parallel on|off ("" = on)
  bool overlap_grad_reduce{false};  ///< --overlap-grad-reduce
  int ep{1};                     ///< --ep
  std::string overlap;           ///< --overlap none|a2a|full ("" = none)
  int streams{0};                ///< --streams N (0 = one per micro-batch of a cell)
  std::string recompute;         ///< --recompute none|selective|full|full:N|auto|per stage
  std::string mem_capacity;      ///< --mem-capacity 80GiB
  int iterations{1};           ///< --iterations K
  std::string optimizer_step;  ///< --optimizer-step MS (decimal ms); empty = 0
  std::string sync{"allreduce"};  ///< --sync allreduce|post-validation
  std::string pytorch_notation{"new"};  ///< --pytorch-notation new|old, for a *.csv schedule
  std::string seq;               ///< --seq N: the --model's sequence length, overridden
  int slices{1};                 ///< --slices N (seq1f1b)
  std::string slicing{"even"};   ///< --slicing even|balanced|L1,L2,...
  std::string attn_share;        ///< --attn-share A; "" = the model's, else 0
  std::string jitter;                   ///< --jitter CV; empty = none
  std::string seed;                     ///< --seed N; empty = 1
  std::string samples;                  ///< --samples K; empty = 100 with --jitter, else none
  std::vector<std::string> slow;        ///< --slow device=D,factor=X (repeatable)
  std::string offload;                  ///< --offload none|auto|FRACTION|stages=..,fraction=..
};

/// Adds --costs, --costs-file and --calibrate.
void add_cost_options(CLI::App& cmd, RunOptions& options);

/// Adds --comm-mode and --link.
void add_comm_options(CLI::App& cmd, RunOptions& options);

/// Adds --iterations, --optimizer-step and --sync.
void add_iteration_options(CLI::App& cmd, RunOptions& options);

/// Adds --model, --device, --layout, --layers-per-stage, --dp, --zero, --tp, --recompute and
/// --mem-capacity.
void add_model_options(CLI::App& cmd, RunOptions& options);

/// --slices, --slicing and --attn-share (sequence slices of a micro-batch: seq1f1b, ...).
void add_slice_options(CLI::App& cmd, RunOptions& options);

/// The workload of --model/--device, or nullopt without --model (--device alone is an error).
[[nodiscard]] std::optional<WorkloadSpec> resolve_workload(const RunOptions& options);

/// How many schedules a command's -s takes.
enum class Schedules : std::uint8_t { one, many };

/// Adds the shared options to `cmd`; -s takes one schedule or a comma list (`how_many`).
/// -p and -m are not marked required: a schedule file carries its shape (see require_shape).
void add_run_options(CLI::App& cmd, RunOptions& options, Schedules how_many);

/// Throws CLI11's usage error (`--stages is required`, exit 2) when -s names a schedule (not
/// only files) and -p or -m is missing. Call it first in the command's callback.
void require_shape(const CLI::App& cmd, const RunOptions& options);

/// Adds `--pytorch-notation new|old` (how a *.csv schedule file is read) to `cmd`.
void add_pytorch_notation_option(CLI::App& cmd, std::string& notation);

/// The cost spec: the cost file (or a calibration) first, then --costs overrides on top. A
/// calibration reports to io.progress, and its warnings (noisy timings) go to io.err.
[[nodiscard]] CostSpec resolve_costs(const RunOptions& options, Io io);

/// --comm-mode and --link as the run's communication model.
[[nodiscard]] CommOptions comm_options(const RunOptions& options);

/// The request for one schedule of the options, with costs already resolved.
[[nodiscard]] RunRequest to_request(const RunOptions& options, const std::string& schedule,
                                    const CostSpec& costs);

/// ConfigError `--costs: empty value` for an option of `cmd` given as "" (flags are exempt).
void reject_empty_values(const CLI::App& cmd);

/// One request per schedule of the options' list (the costs and the model resolved once), as
/// simulate (`allow_many` false: one schedule only) and compare build them.
[[nodiscard]] std::vector<RunRequest> run_requests(const RunOptions& options, bool allow_many,
                                                   Io io);

/// --seed's value (simulate's --jitter, execute's weights): an integer 0..2^63-1, else
/// ConfigError `--seed: -1 is out of range`.
[[nodiscard]] std::uint64_t parse_seed(const std::string& text);

/// Adds `-v,--chunks` (0 = the schedule's default, up to the device limit) to `cmd`.
CLI::Option* add_chunks_option(CLI::App& cmd, int& chunks, const std::string& help);

/// Splits `a,b,c` (empty items rejected with ConfigError naming `what`).
[[nodiscard]] std::vector<std::string> split_list(const std::string& text, std::string_view what);

/// A usage error found after parsing (exit 2, with the `--help` hint), such as one stream
/// given where several files are written.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `out/trace.json` for schedule `zb-h1` among several -> `out/trace-zb-h1.json`; `out/trace`
/// -> `out/trace-zb-h1.json` (a derived name has a suffix). `path` itself when not `many`.
/// With `many`, UsageError naming `what` (`--trace`) when `path` is `-`, a device, a FIFO or a
/// directory: one stream cannot hold several files.
[[nodiscard]] std::string path_for(const std::string& path, const std::string& name, bool many,
                                   std::string_view what = "--trace");

// Registration of the command files (each defines one of these).
void add_core_commands(CLI::App& app, Io io, Action& action);  // list, simulate, compare
void add_report_commands(CLI::App& app, Io io, Action& action);  // report_cmds.cpp: sweep, check
void add_schedule_commands(CLI::App& app, Io io, Action& action);  // schedule_cmds.cpp: validate, export
void add_help_commands(CLI::App& app, Io io, Action& action);  // help_docs.cpp: man, completion
void add_model_commands(CLI::App& app, Io io, Action& action);  // model_cmds.cpp: models, costs, plan
void add_measured_commands(CLI::App& app, Io io, Action& action);  // measured_cmds.cpp: import, diff
// The full executable's (ppsim_cli_full): oneDNN, Open MPI, the HTTP server.
void add_calibrate_command(CLI::App& app, Io io, Action& action);  // calibrate_cmd.cpp
void add_execute_command(CLI::App& app, Io io, Action& action);  // execute_cmd.cpp: MPI ranks
void add_serve_command(CLI::App& app, Io io, Action& action);  // serve_cmd.cpp: the playground

/// What only the full executable links, as run_cli reaches it: the commands calibrate, execute
/// and serve, and the calibrations behind --calibrate and --device cpu. The `ppsim` front leaves
/// them empty, so it loads none of those libraries; a command line that needs them makes
/// run_cli answer kExitNeedsFull, and the front runs ppsim-full with the same arguments.
struct FullParts {
  void (*add_calibrate)(CLI::App& app, Io io, Action& action){nullptr};
  void (*add_execute)(CLI::App& app, Io io, Action& action){nullptr};
  void (*add_serve)(CLI::App& app, Io io, Action& action){nullptr};
  CostSpec (*calibrated_costs)(std::string_view spec, std::vector<std::string>* warnings,
                               Progress* progress){nullptr};
  DeviceSpec (*measure_cpu_device)(const ModelSpec& model){nullptr};
  /// Joins MPI for a sweep on several ranks (runs_on_ranks): exec/point_exchange.hpp.
  std::unique_ptr<PointExchange> (*point_exchange)(){nullptr};
};

/// Where a sweep's or a plan's items run: `threads` of this process (0 = every core) and, where
/// mpirun started this process as one of several ranks (runs_on_ranks), the ranks, over MPI
/// joined through the full parts and kept in `exchange` (whose rank 0 alone writes).
[[nodiscard]] Workers shared_workers(unsigned threads, std::unique_ptr<PointExchange>& exchange);
/// `--threads N` of a command whose `items` run on threads (shared_workers).
void add_threads_option(CLI::App& command, unsigned& threads, std::string_view items);

/// The parts this process links: all empty unless link_full_parts() ran.
[[nodiscard]] FullParts& full_parts();
}  // namespace ppsim::cli
