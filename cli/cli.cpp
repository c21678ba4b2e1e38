// run_cli: builds the command line, runs the chosen command, maps errors to exit codes.
#include "cli/cli.hpp"

#include "cli/commands.hpp"
#include "ppsim/io/comm_text.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/launcher_env.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/slicing_text.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/variability.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <fmt/format.h>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string_view>

namespace ppsim {

namespace cli {

FullParts& full_parts() {
  static FullParts parts;
  return parts;
}

namespace {

// A process without the full parts reaches them only when runs_without_full_parts was wrong.
std::string without_full(std::string_view what) {
  return fmt::format("{} needs ppsim-full (oneDNN, Open MPI, the HTTP server), which this "
                     "process does not link",
                     what);
}

DeviceSpec measured_cpu_device(const ModelSpec& model) {
  if (full_parts().measure_cpu_device == nullptr)
    throw std::logic_error(without_full("--device cpu"));
  return full_parts().measure_cpu_device(model);
}

} // namespace

void add_slice_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--slices", o.slices,
                 "sequence slices per micro-batch (seq1f1b, seq-zb-h1, interleaved-seq1f1b; "
                 "default 1): F slice by slice, the backwards from the last slice down")
      ->check(CLI::Range(1, limits::kMaxSlices));
  cmd.add_option("--slicing", o.slicing,
                 "how --slices cuts the sequence: even (default), balanced (equal F + B per "
                 "slice under causal attention) or lengths L1,L2,...");
  cmd.add_option("--attn-share", o.attn_share,
                 "attention's share of F's time, which grows with a slice's context (default: "
                 "the --model's at its sequence length, else 0)");
}

void add_run_options(CLI::App& cmd, RunOptions& o, Schedules how_many) {
  cmd.add_option("-s,--schedule", o.schedules,
                 how_many == Schedules::many
                     ? "schedule names, comma-separated, or schedule files (*.csv, *.json)"
                     : "a schedule name or a schedule file (*.csv, *.json)")
      ->required();
  // NOTE: -p and -m are required unless -s is a schedule file (which carries its shape);
  // require_shape() checks that after parsing, as the usage error CLI11 gives for ->required().
  cmd.add_option("-p,--stages", o.devices, "pipeline devices (ranks); required for a name");
  cmd.add_option("-m,--microbatches", o.microbatches,
                 "micro-batches per iteration; required for a name");
  add_chunks_option(cmd, o.chunks, "stages per device (interleaved); default per schedule");
  add_slice_options(cmd, o);
  add_cost_options(cmd, o);
  cmd.add_option("--mem-limit", o.mem_limit,
                 "activation memory limit per device: 2p (K*p*M_B), 12 (M_B), or bytes (3GiB)");
  if (cmd.get_name() != "export") add_comm_options(cmd, o);
  add_model_options(cmd, o);
  add_pytorch_notation_option(cmd, o.pytorch_notation);
  // NOTE: execute has its own --iterations (real training steps on MPI ranks) and export writes
  // one iteration's order; neither simulates iterations, so they do not get these options.
  if (cmd.get_name() == "execute" || cmd.get_name() == "export") return;
  add_iteration_options(cmd, o);
  cmd.add_option("--jitter", o.jitter,
                 "noisy durations: each task's lognormal with this coefficient of variation, "
                 "mean kept; reports the distribution of the cost over --samples");
  cmd.add_option("--seed", o.seed, "seed of --jitter's samples (default 1)");
  cmd.add_option("--samples", o.samples,
                 "samples of --jitter (default 100); compare counts how often each schedule wins");
  cmd.add_option("--offload", o.offload,
                 "none (default), auto (the smallest fraction that fits the memory limit), a "
                 "fraction of every activation (0.5), or stages=A-B,chunks=A-B,fraction=X: "
                 "offload after F, reload before the backward, on a copy stream per device");
  cmd.add_option("--slow", o.slow,
                 "device=D,factor=X: a straggler, device D's tasks take X times as long "
                 "(repeatable)");
}

void add_cost_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--costs", o.costs,
                 "costs per device-stage: F=1,B=1,W=1,BW=..,FB=..,comm=0 (ms),MB=1,MW=0.5 (M_B)");
  cmd.add_option("--costs-file", o.costs_file, "a ppsim.costs/1 cost file (data/costs/*.json)");
  cmd.add_option("--calibrate", o.calibrate,
                 "calibrate on this CPU first: dim=..,tokens=..,blocks=..[,threads=..]");
}

void add_comm_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--comm-mode", o.comm_mode,
                 "async (sends do not occupy the sender; default) or blocking (isend + wait: "
                 "the sender waits until its message is delivered)");
  cmd.add_option("--link", o.link,
                 "latency=MS,bandwidth=GB/s,contention=none|duplex: a message takes latency + "
                 "bytes / bandwidth (bytes: --costs act_bytes=,grad_bytes=); duplex: one "
                 "message at a time per directed device pair");
}

void add_iteration_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--iterations", o.iterations,
                 "simulate K training iterations back to back (default 1); metrics stay per "
                 "iteration, the trace shows all, iteration_time_ms is the steady state");
  cmd.add_option("--optimizer-step", o.optimizer_step,
                 "optimizer step per device after each iteration, ms (default 0)");
  cmd.add_option("--sync", o.sync,
                 "at the step: allreduce (barrier, everyone waits for the slowest; default) or "
                 "post-validation (no barrier, ZB paper section 4)");
}

CLI::Option* add_chunks_option(CLI::App& cmd, int& chunks, const std::string& help) {
  return cmd.add_option("-v,--chunks", chunks, help)->check(CLI::Range(0, limits::kMaxDevices));
}

void require_shape(const CLI::App& cmd, const RunOptions& o) {
  bool all_files = !o.schedules.empty();
  for_each_field(o.schedules, ',', [&](std::string_view item) {
    all_files = all_files && is_schedule_file(item);
    return true;
  });
  if (all_files) return;
  for (const auto& [flag, given] : {std::pair{"--stages", o.devices.has_value()},
                                    {"--microbatches", o.microbatches.has_value()}})
    if (!given) throw CLI::RequiredError(cmd.get_option(flag)->get_name());
}

void add_pytorch_notation_option(CLI::App& cmd, std::string& notation) {
  cmd.add_option("--pytorch-notation", notation,
                 "vocabulary of a *.csv schedule: new (I = backward for the input, B = full "
                 "backward; default) or old (PyTorch before I existed: B = backward for the "
                 "input when a W follows)")
      ->check(CLI::IsMember({"new", "old"}));
}

namespace {

// --iterations, --optimizer-step and --sync as values.
IterationOptions iteration_options(const RunOptions& o) {
  IterationOptions it;
  it.count = o.iterations;
  if (!o.optimizer_step.empty()) {
    const auto where = fmt::format("--optimizer-step '{}'", excerpt(o.optimizer_step));
    it.optimizer_step = ms_to_ticks(parse_number(o.optimizer_step, where), where);
  }
  it.sync = parse_sync(o.sync);
  return it;
}

} // namespace

void add_model_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--model", o.model,
                 "costs from a transformer: a preset (ppsim models) or a ppsim.model/1 file");
  cmd.add_option("--device", o.device,
                 "with --model: a100, h100, h200, gh200, cpu (measured here), or a ppsim.device/1 "
                 "file");
  cmd.add_option("--layout", o.layout,
                 "with --model: layers per stage in Megatron's syntax, e.g. 'Et*3|(tt|)*2|ttL'");
  cmd.add_option("--layers-per-stage", o.layers_per_stage,
                 "with --model: decoder layers per stage, e.g. 5,6,6,5");
  cmd.add_option("--dp", o.dp,
                 "with --model: data-parallel replicas (default 1); each stage's fp32 gradients "
                 "are all-reduced over them on the device's link after its last backward, and "
                 "the iteration ends with that tail");
  cmd.add_option("--zero", o.zero,
                 "with --model: 1 shards the optimizer state over --dp (reduce-scatter of the "
                 "gradients, all-gather of the parameters after the optimizer step)");
  cmd.add_option("--tp", o.tp,
                 "with --model: tensor-parallel ranks per stage (with sequence parallelism)");
  cmd.add_option("--sequence-parallel", o.sequence_parallel,
                 "with --model and --tp: on (default; norms and dropouts on s/tp tokens) or off "
                 "(Megatron's tensor parallelism of 2021: they run on every token, all-reduces)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_flag("--overlap-grad-reduce", o.overlap_grad_reduce,
               "with --model and --dp: a stage's gradient reduction may start when its last "
               "backward starts (DDP's buckets, Megatron's --overlap-grad-reduce)");
  cmd.add_option("--ep", o.ep,
                 "with a mixture-of-experts --model: expert-parallel ranks (each holds experts/ep; "
                 "the tokens reach them by all-to-alls, over NVLink within a node)");
  cmd.add_option("--overlap", o.overlap,
                 "with --model: none (default), a2a (the all-to-alls of one micro-batch under the "
                 "other's compute: DualPipe's cells from sub-operations, and Combined 1F1B for "
                 "the other schedules) or full (the TP collectives too)")
      ->check(CLI::IsMember({"none", "a2a", "full"}));
  cmd.add_option("--streams", o.streams,
                 "with --overlap: comm streams per device (1: two collectives never run at once, "
                 "as under CUDA_DEVICE_MAX_CONNECTIONS=1; default one per micro-batch)")
      ->check(CLI::Range(1, 64));
  cmd.add_option("--recompute", o.recompute,
                 "with --model: none, selective, full, full:N (the first N layers of each stage), "
                 "one per stage (selective,none,full:2), or auto (per stage the cheapest that fits)");
  cmd.add_option("--seq", o.seq,
                 "with --model: tokens per sequence instead of the model's (long context: 32768)");
  cmd.add_option("--mem-capacity", o.mem_capacity,
                 "bytes per device (80GiB) for the out-of-memory check; default the device's");
}

std::optional<WorkloadSpec> resolve_workload(const RunOptions& o) {
  if (o.model.empty()) {
    for (const auto& [flag, given] :
         {std::pair{"--device", !o.device.empty()}, {"--layout", !o.layout.empty()},
          {"--layers-per-stage", !o.layers_per_stage.empty()},
          {"--recompute", !o.recompute.empty()}, {"--seq", !o.seq.empty()},
          {"--sequence-parallel", !o.sequence_parallel.empty()},
          {"--overlap-grad-reduce", o.overlap_grad_reduce}, {"--ep", o.ep != 1},
          {"--overlap", !o.overlap.empty()}, {"--streams", o.streams != 0}})
      if (given) throw ConfigError(fmt::format("{} needs --model", flag));
    return std::nullopt;
  }
  if (!o.costs_file.empty() || !o.calibrate.empty())
    throw ConfigError("--model and --costs-file/--calibrate: give one source of costs");
  WorkloadSpec w;
  w.model = load_model(o.model);
  if (!o.seq.empty())
    w.model.seq = static_cast<int>(parse_integer(o.seq, "--seq", 1, limits::kMaxSeq));
  const std::string device = o.device.empty() ? "h100" : o.device;
  w.device = device == "cpu" ? measured_cpu_device(w.model) : load_device(device);
  w.layout = o.layout;
  if (!o.layers_per_stage.empty())
    for (const std::string& item : split_list(o.layers_per_stage, "--layers-per-stage"))
      w.layers_per_stage.push_back(
          static_cast<int>(parse_integer(item, "--layers-per-stage", 0, 4096)));
  w.training = TrainingSpec{.dp = o.dp,
                            .zero = o.zero,
                            .tp = o.tp,
                            .sequence_parallel = o.sequence_parallel != "off",
                            .overlap_grad_reduce = o.overlap_grad_reduce,
                            .ep = o.ep,
                            .overlap = o.overlap == "a2a"    ? OverlapMode::a2a
                                       : o.overlap == "full" ? OverlapMode::full
                                                             : OverlapMode::none,
                            .comm_streams = o.streams};
  if (o.streams != 0 && w.training.overlap == OverlapMode::none)
    throw ConfigError("--streams needs --overlap a2a or full");
  apply_recompute(w, parse_recompute(o.recompute));
  return w;
}

CostSpec resolve_costs(const RunOptions& o, Io io) {
  if (!o.costs_file.empty() && !o.calibrate.empty())
    throw ConfigError("--costs-file and --calibrate: give one of them");
  CostSpec spec;
  if (!o.costs_file.empty()) spec = load_cost_file(o.costs_file);
  if (!o.calibrate.empty()) {
    std::vector<std::string> warnings;
    if (full_parts().calibrated_costs == nullptr) throw std::logic_error(without_full("--calibrate"));
    spec = full_parts().calibrated_costs(o.calibrate, &warnings, &io.progress);
    if (!warnings.empty()) io.progress.finish();
    for (const std::string& w : warnings) io.err << "ppsim: warning: calibrate: " << w << "\n";
  }
  if (!o.costs.empty()) apply_costs(spec, o.costs);
  for (const std::string& slow : o.slow) spec.slow.push_back(parse_slow(slow));
  return spec;
}

CommOptions comm_options(const RunOptions& o) {
  CommOptions comm;
  comm.mode = parse_comm_mode(o.comm_mode);
  if (!o.link.empty()) comm.link = parse_link(o.link);
  return comm;
}

RunRequest to_request(const RunOptions& o, const std::string& schedule, const CostSpec& costs) {
  RunRequest rq;
  rq.schedule = schedule;
  rq.devices = o.devices;
  rq.microbatches = o.microbatches;
  rq.chunks = o.chunks;
  rq.costs = costs;
  rq.mem_limit = parse_mem_limit(o.mem_limit);
  rq.iterations = iteration_options(o);
  rq.comm = comm_options(o);
  rq.offload = parse_offload(o.offload);
  rq.workload = resolve_workload(o);
  if (rq.workload) rq.cost_overrides = o.costs;
  if (!o.mem_capacity.empty()) rq.mem_capacity_bytes = parse_bytes(o.mem_capacity, "--mem-capacity");
  else if (rq.workload) rq.mem_capacity_bytes = rq.workload->device.memory_gib * 1073741824.0;
  rq.pytorch_notation = parse_pytorch_notation(o.pytorch_notation);
  rq.slices = o.slices;
  rq.slicing = parse_slicing(o.slicing);
  if (!o.attn_share.empty()) rq.attention_share = parse_number(o.attn_share, "--attn-share");
  if (!o.jitter.empty() || !o.samples.empty()) {
    rq.jitter.cv = o.jitter.empty() ? 0.0 : parse_number(o.jitter, "--jitter");
    rq.jitter.samples = o.samples.empty() ? 100
                                          : static_cast<int>(parse_integer(
                                                o.samples, "--samples", 1, limits::kMaxSamples));
    check_jitter(rq.jitter);
  }
  if (!o.seed.empty()) {
    if (!rq.jitter.requested()) throw ConfigError("--seed: needs --jitter (or --samples)");
    rq.jitter.seed = parse_seed(o.seed);
  }
  return rq;
}

std::uint64_t parse_seed(const std::string& text) {
  return static_cast<std::uint64_t>(
      parse_integer(text, "--seed", 0, std::numeric_limits<long long>::max()));
}

std::vector<std::string> split_list(const std::string& text, std::string_view what) {
  std::vector<std::string> items;
  for_each_field(text, ',', [&](std::string_view item) {
    if (item.empty()) throw ConfigError(fmt::format("{} '{}': empty item", what, excerpt(text)));
    items.emplace_back(item);
    return true;
  });
  return items;
}

void reject_empty_values(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0 || opt->get_expected_min() == 0) continue;  // absent, or a flag
    for (const std::string& value : opt->results())
      if (trim(value).empty())
        throw ConfigError(fmt::format("{}: empty value", opt->get_name()));
  }
}

std::string path_for(const std::string& path, const std::string& name, bool many,
                     std::string_view what) {
  if (!many) return path;
  // One file per name: a stream (stdout, a device, a FIFO) cannot hold several, and a name
  // derived from one (`/dev/full-1f1b`) would be a regular file beside the device.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (path == "-" || (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)))
    throw UsageError(fmt::format("{} {}: several files are written (one per schedule or part); "
                                 "give a file name, not standard output, a device, a FIFO or a "
                                 "directory",
                                 what, excerpt(path)));
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  std::string safe;
  for (char c : name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  // NOTE: a name without a suffix gets the trace's `.json`: `out/t` -> `out/t-1f1b.json`, so
  // that every derived name opens in the trace viewer. A leading dot is a hidden file's name,
  // not a suffix.
  const auto base = slash == std::string::npos ? 0 : slash + 1;
  if (dot == std::string::npos || dot <= base) return path + "-" + safe + ".json";
  return path.substr(0, dot) + "-" + safe + path.substr(dot);
}

} // namespace cli

bool runs_without_full_parts(const std::vector<std::string>& args) {
  if (args.size() == 1 && args.front() == "--version") return true;
  // The commands of ppsim_cli (cli::add_core_commands ... add_measured_commands); a test checks
  // that this list is every command but calibrate, execute, serve, man and completion.
  static constexpr std::array<std::string_view, 13> front = {
      "list", "simulate", "compare", "sweep", "check", "validate",
      "export", "models", "costs", "plan", "validate-model", "import", "diff"};
  if (args.empty() || std::find(front.begin(), front.end(), args.front()) == front.end())
    return false;
  if (runs_on_ranks(args)) return false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--calibrate" || a.starts_with("--calibrate=") || a == "--device=cpu") return false;
    if (a == "--device" && i + 1 < args.size() && args[i + 1] == "cpu") return false;
  }
  return true;
}

bool runs_on_ranks(const std::vector<std::string>& args) {
  return !args.empty() && (args.front() == "sweep" || args.front() == "plan") &&
         launched_as_several_ranks();
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_cli(args, out, err, Terminal{});
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            const Terminal& terminal) {
  constexpr std::string_view version = "ppsim 0.1.0";
  // NOTE: answered before the command line is built and without CLI11's CallForVersion throw:
  // the first throw of a static executable sorts every unwind table (3 ms of the front's start).
  if (args.size() == 1 && args.front() == "--version") {
    out << version << "\n";
    return kExitOk;
  }
  CLI::App app{"ppsim: pipeline-parallel training schedule simulator"};
  app.name("ppsim");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(version));
  cli::ProgressReporter progress(err, terminal.err_is_terminal, terminal.clock);
  cli::Io io{out, err, progress};
  cli::Action action;
  const cli::FullParts& full = cli::full_parts();
  if (full.add_calibrate == nullptr && !runs_without_full_parts(args)) return kExitNeedsFull;
  // The order of --help; the full parts' commands where they always were.
  const auto add = [&](auto fn) {
    if (fn != nullptr) fn(app, io, action);
  };
  cli::add_core_commands(app, io, action);
  add(full.add_calibrate);
  cli::add_report_commands(app, io, action);
  cli::add_schedule_commands(app, io, action);
  add(full.add_execute);
  cli::add_model_commands(app, io, action);
  add(full.add_serve);
  cli::add_measured_commands(app, io, action);
  cli::add_help_commands(app, io, action);

  std::string where = "ppsim";
  try {
    // CLI11 would answer an unknown command with "A subcommand is required".
    if (!args.empty() && !args.front().starts_with('-')) {
      const auto known = app.get_subcommands([&](const CLI::App* sub) {
        return sub->check_name(args.front());
      });
      if (known.empty()) {
        std::string names;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
          names += (names.empty() ? "" : ", ") + sub->get_name();
        err << fmt::format("ppsim: error: usage: unknown command '{}' (valid: {})\nRun 'ppsim "
                           "--help' for usage.\n",
                           excerpt(args.front()), names);
        return kExitUsage;
      }
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      const CLI::App* sub = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
      out << sub->help();
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::CallForVersion& e) {
      out << e.what() << "\n";
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      const auto subs = app.get_subcommands();
      const std::string cmd = subs.empty() ? "ppsim" : "ppsim " + subs.front()->get_name();
      err << fmt::format("ppsim: error: {}: {}\nRun '{} --help' for usage.\n",
                         subs.empty() ? "usage" : subs.front()->get_name(), e.what(), cmd);
      return kExitUsage;
    }
    const auto subs = app.get_subcommands();
    if (!subs.empty()) where = subs.front()->get_name();
    // `--costs ""`, `-o ""`: an option given with nothing is a mistake, never "not given".
    cli::reject_empty_values(app);
    for (const CLI::App* sub : subs) cli::reject_empty_values(*sub);
    if (!action) return kExitOk;
    // NOTE: execute streams its ranks' output and serve runs until stopped: no progress line.
    if (where != "execute" && where != "serve") progress.start(where, !terminal.clock);
    const int code = action();
    progress.finish();
    return code;
  } catch (const cli::UsageError& e) {
    progress.finish();
    err << fmt::format("ppsim: error: {}: {}\nRun 'ppsim {} --help' for usage.\n", where,
                       e.what(), where);
    return kExitUsage;
  } catch (const std::exception& e) {
    progress.finish();
    const int code = exit_code_of(e);
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
      err << fmt::format("ppsim: error: {}: out of memory: the problem is too large\n", where);
    else if (code == kExitInternal)
      err << fmt::format("ppsim: error: {}: internal error: {}\n", where, e.what());
    else
      err << fmt::format("ppsim: error: {}: {}\n", where, e.what());
    return code;
  }
}

int exit_code_of(const std::exception& e) {
  if (dynamic_cast<const cli::UsageError*>(&e) != nullptr) return kExitUsage;
  if (dynamic_cast<const ConfigError*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const ScheduleError*>(&e) != nullptr) return kExitInvalidSchedule;
  if (dynamic_cast<const InfeasibleError*>(&e) != nullptr) return kExitInfeasible;
  if (dynamic_cast<const ExecutionError*>(&e) != nullptr) return kExitExecutionFailed;
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return kExitBadInput;
  return kExitInternal;
}

} // namespace ppsim
