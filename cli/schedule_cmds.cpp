// `ppsim validate FILE` and `ppsim export`: checking and writing schedule files.
#include "cli/commands.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"
#include "ppsim/viz/schedule_check.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <ostream>
#include <sstream>

namespace ppsim::cli {

namespace {

struct ExportOptions {
  RunOptions run;
  std::string format;
  std::string output;
  bool json{false};
};

// Every violation with the grid, or the deadlock found by simulating with unit costs.
void check_schedule(const Schedule& s, const std::string& where) {
  const auto violations = validate(s);
  if (!violations.empty())
    throw ScheduleError(fmt::format("{}: {}", where, format_violations(s, violations)));
  try {
    // NOTE: a deadlock is a property of the order alone; unit costs are enough to find it.
    (void)simulate(s, cost_model_for(CostSpec{}, s));
  } catch (const ScheduleError& e) {
    throw ScheduleError(fmt::format("{}: {}", where, e.what()));
  }
}

// `slots`: PyTorch's idle slots, for a generator that reproduces them; empty = none known.
void write_as(std::ostream& out, const Schedule& s, const std::string& format,
              const std::vector<PaddedRow>& slots) {
  if (format == "json") write_schedule_json(out, s);
  else if (!slots.empty()) write_pytorch_csv(out, s, slots);
  else write_pytorch_csv(out, s);
}

// PyTorch's idle slots of a generated schedule, when its generator reproduces them.
std::vector<PaddedRow> pytorch_slots_of(const RunRequest& rq) {
  if (is_schedule_file(rq.schedule)) return {};
  const ScheduleInfo* info = find_schedule(rq.schedule);
  if (info == nullptr || info->pytorch_slots == nullptr) return {};
  return info->pytorch_slots(
      {.devices = rq.devices.value_or(0), .microbatches = rq.microbatches.value_or(0),
       .chunks = rq.chunks});
}

} // namespace

void add_schedule_commands(CLI::App& app, Io io, Action& action) {
  // validate
  auto file = std::make_shared<std::string>();
  auto notation = std::make_shared<std::string>("new");
  auto json = std::make_shared<bool>(false);
  auto* val = app.add_subcommand(
      "validate", "check a schedule file (*.csv PyTorch compute-only, *.json ppsim.schedule/1): "
                  "missing or duplicated tasks, order on each device, deadlocks");
  val->add_option("FILE", *file, "the schedule file")->required();
  add_pytorch_notation_option(*val, *notation);
  val->add_flag("--json", *json, "print the outcome as JSON (schema ppsim.validate/1)");
  val->callback([io, &action, file, notation, json] {
    action = [io, file, notation, json] {
      const Schedule s = load_schedule_file(*file, parse_pytorch_notation(*notation));
      if (*json) {
        // The whole outcome on stdout as one document; the exit code as without --json.
        std::string error;
        try {
          check_schedule(s, *file);
        } catch (const ScheduleError& e) {
          error = e.what();
        }
        io.out << validate_json(s, *file, validate(s), error) << "\n";
        if (!error.empty()) throw ScheduleError(fmt::format("{}: not valid (see the JSON document)", *file));
        return 0;
      }
      check_schedule(s, *file);
      io.out << fmt::format("{}: valid: {} tasks on {} devices, {} stages, {}\n",
                            *file, s.task_count(), s.devices, s.stages(), microbatches_text(s));
      return 0;
    };
  });

  // export
  auto opts = std::make_shared<ExportOptions>();
  auto* exp = app.add_subcommand(
      "export", "write a schedule as a PyTorch compute-only CSV or a ppsim JSON file");
  add_run_options(*exp, opts->run, Schedules::one);
  exp->add_option("--format", opts->format, "pytorch-csv (torch.distributed.pipelining) or json")
      ->required()
      ->check(CLI::IsMember({"pytorch-csv", "json"}));
  auto* output = exp->add_option("-o,--output", opts->output,
                                 "output file (written atomically); - or none: stdout");
  // NOTE: without -o the schedule itself is the output (--format json for JSON), so --json, the
  // outcome of writing a file, needs -o.
  exp->add_flag("--json", opts->json, "with -o: print what was written as JSON (ppsim.export/1)")
      ->needs(output);
  exp->callback([io, &action, opts, exp] {
    require_shape(*exp, opts->run);
    action = [io, opts] {
      const RunOptions& o = opts->run;
      if (!is_schedule_file(o.schedules) && o.schedules.find(',') != std::string::npos)
        throw ConfigError(
            fmt::format("--schedule '{}': export takes one schedule", o.schedules));
      const RunRequest rq = to_request(o, o.schedules, resolve_costs(o, io));
      const Schedule s = resolve_request(rq).schedule;
      check_schedule(s, s.name);
      io.progress.finish();
      const auto slots = opts->format == "pytorch-csv" ? pytorch_slots_of(rq)
                                                        : std::vector<PaddedRow>{};
      if (opts->output.empty() || opts->output == "-") {
        // Render first, so that an error leaves stdout untouched too.
        std::ostringstream text;
        write_as(text, s, opts->format, slots);
        io.out << text.str();
        return 0;
      }
      write_file_atomically(opts->output,
                            [&](std::ostream& f) { write_as(f, s, opts->format, slots); });
      if (opts->json) {
        io.out << export_json(s, opts->output, opts->format) << "\n";
        return 0;
      }
      io.out << fmt::format("{}: wrote schedule '{}' ({}, {} tasks on {} devices)\n",
                            opts->output, s.name, opts->format, s.task_count(), s.devices);
      return 0;
    };
  });
}

} // namespace ppsim::cli
