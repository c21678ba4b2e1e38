// Activation offload of a run request: copy costs, the per-stage plan, `auto`.
#include "ppsim/run/offload.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <fmt/format.h>

namespace ppsim {

namespace {

const DeviceSpec* device_of(const RunRequest& rq) {
  return rq.workload ? &rq.workload->device : nullptr;
}

std::string where_of(const OffloadSpec& spec) {
  return fmt::format("--offload '{}'", excerpt(spec.text));
}

// The first device whose peak is over the limit or the capacity, or -1.
int over_limit(const Run& run, const RunRequest& rq, double mem_limit) {
  for (const DeviceMetrics& d : run.metrics.per_device) {
    if (mem_limit >= 0 && d.peak_memory > mem_limit + 1e-9) return d.device;
    if (rq.mem_capacity_bytes > 0 && d.peak_bytes > rq.mem_capacity_bytes) return d.device;
  }
  return -1;
}

} // namespace

OffloadPlan copy_costs(const CostSpec& costs, const DeviceSpec* device, std::string_view where) {
  OffloadPlan plan;
  if (costs.copy >= 0) {
    plan.ns_per_unit = static_cast<double>(costs.copy);
    return plan;
  }
  if (device == nullptr)
    throw ConfigError(fmt::format(
        "{}: the time of a copy is unknown: give --costs copy=MS (ms to copy one M_B to or from "
        "the host), or --model with a --device whose host link is known",
        where));
  if (device->host_link_gbytes_per_s <= 0)
    throw ConfigError(fmt::format(
        "{}: device '{}' has no host link: give its \"host_link\": {{\"gbytes_per_s\"}} in a "
        "ppsim.device/1 file, or --costs copy=MS",
        where, excerpt(device->name)));
  if (costs.memory_unit_bytes <= 0)
    throw ConfigError(fmt::format(
        "{}: the bytes of M_B are unknown, so a copy over the host link has no time: give "
        "--costs copy=MS",
        where));
  plan.latency = ms_to_ticks(device->host_link_latency_ms, where);
  // bytes / (GB/s * 1e9 B per GB) seconds = bytes / GB/s nanoseconds.
  plan.ns_per_unit = costs.memory_unit_bytes / device->host_link_gbytes_per_s;
  return plan;
}

OffloadPlan offload_plan(const OffloadSpec& spec, const Schedule& schedule, const CostSpec& costs,
                         const DeviceSpec* device) {
  const std::string where = where_of(spec);
  OffloadPlan plan = copy_costs(costs, device, where);
  const int S = schedule.stages();
  const Topology topo(schedule);
  if (spec.first_stage >= 0 && spec.last_stage >= S)
    throw ConfigError(fmt::format("{}: stage {} is beyond the schedule's stages 0..{}", where,
                                  spec.last_stage, S - 1));
  if (spec.first_chunk >= 0 && spec.last_chunk >= topo.chunks())
    throw ConfigError(fmt::format("{}: chunk {} is beyond the schedule's chunks 0..{}", where,
                                  spec.last_chunk, topo.chunks() - 1));
  plan.fraction.assign(static_cast<std::size_t>(S), 0.0);
  bool any = false;
  for (int s = 0; s < S; ++s) {
    const bool stage_ok = spec.first_stage < 0 || (s >= spec.first_stage && s <= spec.last_stage);
    const int c = topo.chunk_of(s);
    const bool chunk_ok = spec.first_chunk < 0 || (c >= spec.first_chunk && c <= spec.last_chunk);
    if (stage_ok && chunk_ok) {
      plan.fraction[static_cast<std::size_t>(s)] = spec.fraction;
      any = true;
    }
  }
  if (!any) throw ConfigError(fmt::format("{}: selects no stage of the schedule", where));
  return plan;
}

OffloadPlan request_offload(const RunRequest& rq, const Schedule& schedule, const CostSpec& costs,
                            double mem_limit) {
  const OffloadSpec& spec = rq.offload;
  if (!spec.requested()) return {};
  const std::string where = where_of(spec);
  if (rq.iterations.requested())
    throw ConfigError(fmt::format("{}: not modelled with --iterations yet", where));
  if (rq.jitter.requested())
    throw ConfigError(fmt::format("{}: not modelled with --jitter or --samples yet", where));
  const DeviceSpec* device = device_of(rq);
  if (device != nullptr && device->host_link_shared && costs.copy < 0)
    throw ConfigError(fmt::format(
        "{}: device '{}' shares its host link with pipeline messages, which is not modelled "
        "yet (give the device file \"shared\": false, or --costs copy=MS)",
        where, excerpt(device->name)));
  if (spec.mode == OffloadSpec::Mode::fraction) return offload_plan(spec, schedule, costs, device);
  if (mem_limit < 0 && rq.mem_capacity_bytes <= 0)
    throw ConfigError(fmt::format(
        "{}: needs a memory limit to fit: --mem-limit, or a capacity (--mem-capacity, or "
        "--model with a --device that has one)",
        where));
  // The smallest fraction of the grid that fits, none first.
  constexpr int kSteps = 20;
  OffloadSpec uniform = spec;
  uniform.mode = OffloadSpec::Mode::fraction;
  int device_over = -1;
  double peak = 0;
  for (int k = 0; k <= kSteps; ++k) {
    OffloadPlan plan;
    if (k > 0) {
      uniform.fraction = static_cast<double>(k) / kSteps;
      plan = offload_plan(uniform, schedule, costs, device);
    }
    const Run run = run_schedule(schedule, costs, rq.comm, plan);
    device_over = over_limit(run, rq, mem_limit);
    if (device_over < 0) return plan;
    peak = run.metrics.per_device[static_cast<std::size_t>(device_over)].peak_memory;
  }
  throw InfeasibleError(fmt::format(
      "{}: device {} peaks at {} M_B even with every activation offloaded, above {}", where,
      device_over, human_number(peak),
      mem_limit >= 0 ? fmt::format("the limit of {} M_B", human_number(mem_limit))
                     : fmt::format("the capacity of {}", human_bytes(rq.mem_capacity_bytes))));
}

void finish_offload_run(Run& run, const RunRequest& rq) {
  if (!run.offload.any()) {
    if (rq.offload.mode == OffloadSpec::Mode::automatic)
      run.parameters.emplace_back("offload", "auto: none needed");
    return;
  }
  double fraction = 0;
  for (const double f : run.offload.fraction) fraction = std::max(fraction, f);
  std::string text = rq.offload.mode == OffloadSpec::Mode::automatic
                         ? fmt::format("auto: fraction {:g}", fraction)
                         : rq.offload.text;
  text += fmt::format(", copy {} ms per M_B", human_number(run.offload.ns_per_unit / 1e6));
  if (run.offload.latency > 0) text += fmt::format(" + {} ms", human_number(ticks_to_ms(run.offload.latency)));
  run.parameters.emplace_back("offload", text);
  const DeviceSpec* device = device_of(rq);
  if (device == nullptr || device->host_memory_gib <= 0) return;
  const double capacity = device->host_memory_gib * 1024.0 * 1024 * 1024;
  for (const DeviceMetrics& d : run.metrics.per_device)
    if (d.host_peak_bytes > capacity)
      throw OutOfMemoryError(fmt::format(
          "{}: device {} holds {} of offloaded activations on the host, above its host "
          "memory of {}: out of memory",
          run.schedule.name, d.device, human_bytes(d.host_peak_bytes), human_bytes(capacity)));
}

} // namespace ppsim
