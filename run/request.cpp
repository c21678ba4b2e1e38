// Resolution of a run request: memory limit, schedule, simulation, the infeasibility rule.
#include "run/request.hpp"

#include "io/schedule_file.hpp"
#include "io/text_parse.hpp"
#include "schedules/registry.hpp"
#include "sim/errors.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

double resolve_mem_limit(const std::string& text, int devices, const CostSpec& costs) {
  if (text.empty()) return -1;
  const auto bad = [&](std::string_view why) {
    return ConfigError(fmt::format("--mem-limit '{}': {} (use 2p, 1.5p, 12 or 3GiB)", text, why));
  };
  NumberWithUnit n;
  try {
    n = parse_number_with_unit(text, "--mem-limit");
  } catch (const ConfigError&) {
    throw bad("expected a number");
  }
  const double value = n.value;
  if (!std::isfinite(value) || value <= 0) throw bad("must be a positive number");
  const std::string unit(n.unit);
  if (unit.empty()) return value;
  if (unit == "p") return value * devices;
  struct Unit {
    const char* name;
    double bytes;
  };
  static constexpr Unit units[] = {{"B", 1.0},          {"KB", 1e3},
                                   {"MB", 1e6},         {"GB", 1e9},
                                   {"KiB", 1024.0},     {"MiB", 1048576.0},
                                   {"GiB", 1073741824.0}};
  for (const Unit& u : units) {
    if (unit != u.name) continue;
    if (costs.memory_unit_bytes <= 0)
      throw bad("a limit in bytes needs a cost file that knows bytes (memory_unit_bytes), e.g. "
                "from `ppsim calibrate`");
    return value * u.bytes / costs.memory_unit_bytes;
  }
  throw bad(fmt::format("unknown unit '{}'", unit));
}

Schedule build_schedule(const RunRequest& rq, double mem_limit) {
  if (is_schedule_file(rq.schedule)) return load_schedule_file(rq.schedule, rq.pytorch_notation);
  if (!rq.devices || !rq.microbatches)
    throw ConfigError(fmt::format("{}: needs -p STAGES and -m MICROBATCHES", rq.schedule));
  ScheduleSpec spec;
  spec.devices = *rq.devices;
  spec.microbatches = *rq.microbatches;
  spec.chunks = rq.chunks;
  spec.mem_limit = mem_limit;
  spec.costs = &rq.costs;
  return make_schedule(rq.schedule, spec);
}

Run run_request(const RunRequest& rq) {
  const bool file = is_schedule_file(rq.schedule);
  Schedule schedule = file ? load_schedule_file(rq.schedule, rq.pytorch_notation) : Schedule{};
  const int devices = file ? schedule.devices : rq.devices.value_or(0);
  const double mem_limit = resolve_mem_limit(rq.mem_limit, devices, rq.costs);
  if (!file) schedule = build_schedule(rq, mem_limit);
  const IterationOptions& iterations = rq.iterations;
  Run run = iterations.requested() ? run_iterations(std::move(schedule), rq.costs, iterations)
                                   : run_schedule(std::move(schedule), rq.costs);
  run.mem_limit = mem_limit;
  if (mem_limit >= 0) {
    for (const DeviceMetrics& d : run.metrics.per_device) {
      if (d.peak_memory > mem_limit + 1e-9)
        throw InfeasibleError(fmt::format(
            "{}: device {} peaks at {:.4g} M_B, above --mem-limit {} ({:.4g} M_B)",
            run.schedule.name, d.device, d.peak_memory, rq.mem_limit, mem_limit));
    }
    // Overlapping iterations (post-validation) may hold more than one iteration's peak.
    const auto& peaks = run.iterations.peak_memory;
    for (std::size_t d = 0; d < peaks.size(); ++d) {
      if (peaks[d] > mem_limit + 1e-9)
        throw InfeasibleError(fmt::format(
            "{}: device {} peaks at {:.4g} M_B over {} iterations ({}), above --mem-limit {} "
            "({:.4g} M_B)",
            run.schedule.name, d, peaks[d], iterations.count, sync_name(iterations.sync),
            rq.mem_limit, mem_limit));
    }
  }
  return run;
}

} // namespace ppsim
