// `ppsim validate FILE` and `ppsim export`: checking and writing schedule files.
#include "cli/commands.hpp"
#include "io/atomic_file.hpp"
#include "io/schedule_file.hpp"
#include "sim/errors.hpp"
#include "sim/simulator.hpp"
#include "sim/validate.hpp"

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

void write_as(std::ostream& out, const Schedule& s, const std::string& format) {
  if (format == "json") write_schedule_json(out, s);
  else write_pytorch_csv(out, s);
}

} // namespace

void add_schedule_commands(CLI::App& app, Io io, Action& action) {
  // validate
  auto file = std::make_shared<std::string>();
  auto* val = app.add_subcommand(
      "validate", "check a schedule file (*.csv PyTorch compute-only, *.json ppsim.schedule/1): "
                  "missing or duplicated tasks, order on each device, deadlocks");
  val->add_option("FILE", *file, "the schedule file")->required();
  val->callback([io, &action, file] {
    action = [io, file] {
      const Schedule s = load_schedule_file(*file);
      check_schedule(s, *file);
      io.out << fmt::format("{}: valid: {} tasks on {} devices, {} stages, {} micro-batches\n",
                            *file, s.task_count(), s.devices, s.stages(), s.microbatches);
      return 0;
    };
  });

  // export
  auto opts = std::make_shared<ExportOptions>();
  auto* exp = app.add_subcommand(
      "export", "write a schedule as a PyTorch compute-only CSV or a ppsim JSON file");
  add_run_options(*exp, opts->run, false);
  exp->add_option("--format", opts->format, "pytorch-csv (torch.distributed.pipelining) or json")
      ->required()
      ->check(CLI::IsMember({"pytorch-csv", "json"}));
  exp->add_option("-o,--output", opts->output,
                  "output file (written atomically); - or none: stdout");
  exp->callback([io, &action, opts] {
    action = [io, opts] {
      const RunOptions& o = opts->run;
      if (!is_schedule_file(o.schedules) && o.schedules.find(',') != std::string::npos)
        throw ConfigError(
            fmt::format("--schedule '{}': export takes one schedule", o.schedules));
      const RunRequest rq = to_request(o, o.schedules, resolve_costs(o));
      const Schedule s =
          build_schedule(rq, resolve_mem_limit(rq.mem_limit, rq.devices.value_or(0), rq.costs));
      check_schedule(s, s.name);
      if (opts->output.empty() || opts->output == "-") {
        // Render first, so that an error leaves stdout untouched too.
        std::ostringstream text;
        write_as(text, s, opts->format);
        io.out << text.str();
        return 0;
      }
      write_file_atomically(opts->output,
                            [&](std::ostream& f) { write_as(f, s, opts->format); });
      io.out << fmt::format("{}: wrote schedule '{}' ({}, {} tasks on {} devices)\n",
                            opts->output, s.name, opts->format, s.task_count(), s.devices);
      return 0;
    };
  });
}

} // namespace ppsim::cli
