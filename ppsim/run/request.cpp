// Resolution of a run request: memory limit, schedule, simulation, the infeasibility rule.
#include "ppsim/run/request.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/run/offload.hpp"
#include "ppsim/run/recompute.hpp"
#include "ppsim/run/slicing.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/overlap.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task_graph.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <cctype>
#include <vector>
#include <limits>
#include <numeric>

namespace ppsim {

double estimated_run_tasks(std::string_view schedule, int p, int v, int m) {
  const ScheduleInfo* info = is_schedule_file(std::string(schedule)) ? nullptr : find_schedule(schedule);
  const double weight = info != nullptr && info->automatic() ? limits::kSearchWeight : 1;
  return static_cast<double>(p) * (v > 0 ? v : 2) * m * 3 * weight;
}

void check_command_work(double tasks, std::string_view what, std::string_view how,
                        std::string_view advice) {
  if (tasks <= static_cast<double>(limits::kMaxCommandTasks)) return;
  throw ConfigError(fmt::format("{}: about {:.2g} tasks to simulate ({}); at most {:.2g} in one "
                                "command ({})",
                                what, tasks, how, static_cast<double>(limits::kMaxCommandTasks),
                                advice));
}

ConfigError unknown_schedule(std::string_view name, std::string_view where) {
  // The closest name or alias by edit distance, when it is close.
  const auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    std::iota(row.begin(), row.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t up = row[j];
        const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                          std::tolower(static_cast<unsigned char>(b[j - 1]));
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string_view best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  if (name.size() <= 64)
    for (const ScheduleInfo& info : schedule_registry()) {
      std::vector<std::string_view> names{info.name};
      names.insert(names.end(), info.aliases.begin(), info.aliases.end());
      for (const std::string_view n : names)
        if (const std::size_t d = distance(name, n); d < best_d) {
          best_d = d;
          best = n;
        }
    }
  const bool close = !best.empty() && best_d <= std::max<std::size_t>(2, best.size() / 3);
  return ConfigError(fmt::format("{}{}unknown schedule '{}'{} (valid: {})", where,
                                 where.empty() ? "" : ": ", excerpt(name),
                                 close ? fmt::format(" (did you mean '{}'?)", best) : "",
                                 schedule_names()));
}

double mem_limit_units(const MemLimit& limit, int devices, const CostSpec& costs) {
  switch (limit.unit) {
  case MemLimit::Unit::none: return -1;
  case MemLimit::Unit::units: return limit.value;
  case MemLimit::Unit::per_device: return limit.value * devices;
  case MemLimit::Unit::bytes:
    if (costs.memory_unit_bytes <= 0)
      throw ConfigError(fmt::format(
          "--mem-limit '{}': a limit in bytes needs costs that know the bytes of M_B: --model "
          "and --device, or a cost file with memory_unit_bytes (from `ppsim calibrate`); or give "
          "it as 2p, 1.5p or 12 M_B",
          excerpt(limit.text)));
    return limit.value / costs.memory_unit_bytes;
  }
  return -1;
}

// The slices' shares of a request's costs for `slices` slices (none for 1).
void apply_slicing(CostSpec& costs, const RunRequest& rq, int slices) {
  costs.slices.clear();
  if (slices < 1 || slices > limits::kMaxSlices)
    throw ConfigError(fmt::format("--slices {}: must be in 1..{}", slices, limits::kMaxSlices));
  if (slices == 1) return;
  const double attention = rq.attention_share ? *rq.attention_share
                           : rq.workload      ? attention_share(rq.workload->model, rq.workload->device,
                                                                 rq.workload->training)
                                              : 0.0;
  if (rq.workload && (!rq.workload->recompute.empty() || rq.workload->recompute_auto))
    throw ConfigError(fmt::format("--slices {} with a --recompute per stage (or auto) is not "
                                  "modelled: give one choice for every stage",
                                  slices));
  const double scores = rq.workload ? scores_share(rq.workload->model) : 0.0;
  costs.slices = slice_costs(slice_lengths(rq.slicing, slices, attention), attention, scores);
}

CostSpec request_costs(const RunRequest& rq, int devices, std::vector<StageTimeParts>* time_parts) {
  CostSpec costs = rq.costs;
  if (time_parts != nullptr) time_parts->clear();
  if (rq.workload) {
    ModelCosts mc = workload_costs(*rq.workload, devices, rq.chunks);
    costs = std::move(mc.costs);
    if (!rq.cost_overrides.empty()) apply_costs(costs, rq.cost_overrides);
    costs.slow = rq.costs.slow;
    // NOTE: overridden costs are no longer the sum of the model's parts: no breakdown then
    if (time_parts != nullptr && rq.cost_overrides.empty())
      for (std::size_t i = 0; i < mc.times.size(); ++i) {
        const TimeParts all = mc.times[i].all();
        time_parts->push_back(StageTimeParts{all.gemm, all.attention, all.memory, all.tp_comm,
                                             all.ep_comm, all.overhead,
                                             i < mc.optimizer_ms.size() ? mc.optimizer_ms[i] : 0});
      }
  }
  apply_slicing(costs, rq, rq.slices);
  return costs;
}

CostSpec planning_costs(const CostSpec& costs, const CommOptions& comm, const Schedule& placed,
                        Planning use) {
  if (!comm.requested()) return costs;
  const CostModel model = cost_model_for(costs, placed);
  const MessageCosts messages = message_costs(model, comm.link);
  const Topology topo(placed);
  const std::size_t S = model.stage.size();
  // Which stages send an activation forward / a gradient back to another device.
  std::vector<char> sends_forward(S, 0), sends_back(S, 0);
  for (const std::vector<int>& route : placed.routes)
    for (std::size_t i = 0; i + 1 < route.size(); ++i) {
      const int a = route[i], b = route[i + 1];
      if (topo.device_of(a) == topo.device_of(b)) continue;
      sends_forward[static_cast<std::size_t>(a)] = 1;
      sends_back[static_cast<std::size_t>(b)] = 1;
    }
  CostSpec out;
  out.slices = costs.slices;
  out.stages = model.stage;  // per virtual stage, chunks and slow devices applied
  out.memory_unit_bytes = costs.memory_unit_bytes;
  out.source = costs.source;
  if (comm.mode == CommMode::Blocking) {
    // A blocking send keeps the sender's stream until delivery: exactly a task that long whose
    // result is there at its end.
    for (std::size_t st = 0; st < S; ++st) {
      StageCosts& c = out.stages[st];
      const int stage = static_cast<int>(st);
      if (sends_forward[st] != 0) c.F = add_ticks(c.F, messages.time(Kind::F, stage));
      if (sends_back[st] != 0) {
        c.B = add_ticks(c.B, messages.time(Kind::B, stage));
        c.BW = add_ticks(c.BW, messages.time(Kind::B, stage));
      }
      c.FB = -1;
    }
    out.comm = 0;
    return out;
  }
  // One per-edge time for every message: the longest for a generator (it never plans on a
  // message faster than it is), the shortest for a lower bound (which must stay below every
  // order's cost). Equal when the messages are, as a model's are.
  bool any = false;
  Ticks lo = 0, hi = 0;
  for (std::size_t st = 0; st < S; ++st)
    for (const Kind part : {Kind::F, Kind::B}) {
      if ((part == Kind::F ? sends_forward[st] : sends_back[st]) == 0) continue;
      const Ticks t = messages.time(part, static_cast<int>(st));
      lo = any ? std::min(lo, t) : t;
      hi = any ? std::max(hi, t) : t;
      any = true;
    }
  out.comm = use == Planning::schedule ? hi : lo;
  return out;
}

namespace {

// The generator's spec of a request by name; it points into `costs`.
ScheduleSpec spec_of(const RunRequest& rq, double mem_limit, const CostSpec& costs,
                     std::vector<std::string>* notes = nullptr) {
  if (!rq.devices || !rq.microbatches)
    throw ConfigError(fmt::format("{}: needs -p STAGES and -m MICROBATCHES", excerpt(rq.schedule)));
  ScheduleSpec spec;
  spec.devices = *rq.devices;
  spec.microbatches = *rq.microbatches;
  spec.chunks = rq.chunks;
  spec.slices = rq.slices;
  spec.mem_limit = mem_limit;
  spec.costs = &costs;
  spec.notes = notes;
  return spec;
}

// The schedule by name; `notes` gets what its generator says of the last build.
Schedule build_schedule(const RunRequest& rq, double mem_limit, const CostSpec& costs,
                        std::vector<std::string>& notes) {
  // NOTE: the registry's own message quotes the name whole (schedules/ includes only sim/, not
  // io's excerpt()); a name from a user is refused here first, quoted by an excerpt.
  if (find_schedule(rq.schedule) == nullptr)
    throw unknown_schedule(rq.schedule);
  notes.clear();
  Schedule s = make_schedule(rq.schedule, spec_of(rq, mem_limit, costs, &notes));
  if (!rq.comm.requested()) return s;
  // The generators know a per-edge comm only: built again on the run's own messages, folded
  // into that model on the placement the first build chose (a family's placement does not
  // depend on the costs).
  const CostSpec planned = planning_costs(costs, rq.comm, s, Planning::schedule);
  notes.clear();
  return make_schedule(rq.schedule, spec_of(rq, mem_limit, planned, &notes));
}

// The most bytes any device holds whatever the schedule (weights, gradients, optimizer state).
double fullest_state_bytes(const Schedule& schedule, const CostSpec& costs) {
  const CostModel model = cost_model_for(costs, schedule);
  const Topology topo(schedule);
  double state = 0;
  for (int d = 0; d < schedule.devices; ++d) {
    double bytes = 0;
    for (const int stage : topo.device_stages(d))
      bytes += model.stage[static_cast<std::size_t>(stage)].state_bytes;
    state = std::max(state, bytes);
  }
  return state;
}

} // namespace

int request_chunks(const RunRequest& rq) {
  if (rq.chunks != 0 || is_schedule_file(rq.schedule)) return rq.chunks;
  const ScheduleInfo* info = find_schedule(rq.schedule);
  if (info == nullptr) throw unknown_schedule(rq.schedule);
  const int v = built_chunks(*info, ScheduleSpec{});
  return v > 1 ? v : 0;
}

namespace {

ResolvedRequest resolve_uncombined(const RunRequest& rq) {
  ResolvedRequest r;
  const bool file = is_schedule_file(rq.schedule);
  if (file) r.schedule = load_schedule_file(rq.schedule, rq.pytorch_notation);
  if (file && rq.slices > 1 && rq.slices != r.schedule.slices)
    throw ConfigError(fmt::format("--slices {}: the schedule file {} has {} slice{} per "
                                  "micro-batch",
                                  rq.slices, excerpt(rq.schedule), r.schedule.slices,
                                  r.schedule.slices == 1 ? "" : "s"));
  const int devices = file ? r.schedule.devices : rq.devices.value_or(0);
  // A schedule that chooses its own chunk count (looped and V schedules default to two) runs a
  // model's layout of v p stages (which stage holds the embedding and the loss, how the layers
  // split): its costs are assembled for that v, before it is built.
  if (!file && rq.workload && rq.chunks == 0) {
    const int v = request_chunks(rq);
    if (v > 1) {
      RunRequest chosen = rq;
      chosen.chunks = v;
      return resolve_uncombined(chosen);
    }
  }
  // --recompute auto chooses per stage of that layout (v p stages for a chunked schedule).
  if (rq.workload && rq.workload->recompute_auto) return resolve_request(choose_recompute(rq).request);
  r.costs = request_costs(rq, std::max(1, devices), &r.time_parts);
  if (file) apply_slicing(r.costs, rq, r.schedule.slices);
  r.mem_limit = mem_limit_units(rq.mem_limit, devices, r.costs);
  if (file) return r;
  r.info = find_schedule(rq.schedule);
  r.schedule = build_schedule(rq, r.mem_limit, r.costs, r.notes);
  // With a capacity in bytes and no --mem-limit, a search that takes a limit never plans past
  // the device: its default is cut to the activations the fullest device's state leaves room for.
  const bool fill = rq.fill_capacity_bytes > 0;
  const double capacity = fill ? rq.fill_capacity_bytes : rq.mem_capacity_bytes;
  if (r.info != nullptr && takes_mem_limit(*r.info) && r.mem_limit < 0 && capacity > 0 &&
      r.costs.memory_unit_bytes > 0) {
    const double room =
        (capacity - fullest_state_bytes(r.schedule, r.costs)) / r.costs.memory_unit_bytes;
    if (room > 0 && (fill || r.info->generation_limit(spec_of(rq, -1, r.costs)) > room)) {
      r.mem_limit = room;
      r.schedule = build_schedule(rq, r.mem_limit, r.costs, r.notes);
    }
  }
  return r;
}

} // namespace

std::optional<RunRequest> linked_request(const RunRequest& rq) {
  const CommOptions comm = with_cost_link(rq.comm, rq.costs);
  if (comm == rq.comm) return std::nullopt;
  RunRequest linked = rq;
  linked.comm = comm;
  return linked;
}

ResolvedRequest resolve_request(const RunRequest& rq) {
  if (const auto linked = linked_request(rq)) return resolve_request(*linked);
  ResolvedRequest r = resolve_uncombined(rq);
  if (!rq.workload || rq.workload->training.overlap == OverlapMode::none) return r;
  CombinedOrder combined = combine_forward_backward(r.schedule);
  if (combined.cells == 0) return r;
  r.schedule = std::move(combined.schedule);
  r.cells = combined.cells;
  r.kept_apart = combined.kept_apart;
  return r;
}

DataParallelSync request_data_parallel(const RunRequest& rq) {
  DataParallelSync sync;
  if (!rq.workload || rq.workload->training.dp <= 1) return sync;
  const WorkloadSpec& w = *rq.workload;
  sync.replicas = w.training.dp;
  sync.shard = w.training.zero >= 1;
  sync.latency = ms_to_ticks(w.device.link_latency_ms, "--dp: the device's link latency");
  sync.gbytes_per_s = w.device.link_gbytes_per_s;
  sync.param_bytes_per_param = w.model.dtype_bytes();
  sync.overlap = w.training.overlap_grad_reduce;
  return sync;
}

namespace {

// The model's optimizer step of a run: the device with the most parameters (0 without a model
// on a device that knows its HBM bandwidth).
Ticks request_optimizer_step(const RunRequest& rq, const Schedule& schedule, const CostSpec& costs) {
  if (!rq.workload || !kernel_level(rq.workload->device)) return 0;
  const WorkloadSpec& w = *rq.workload;
  std::vector<double> per_device(static_cast<std::size_t>(schedule.devices), 0.0);
  const std::size_t n = std::min(costs.stages.size(), schedule.stage_device.size());
  for (std::size_t s = 0; s < n; ++s)
    per_device[static_cast<std::size_t>(schedule.stage_device[s])] += costs.stages[s].params;
  double slowest = 0;
  for (const double params : per_device)
    slowest = std::max(slowest, stage_optimizer_ms(w.model, w.device, w.training, params));
  return ms_to_ticks(slowest, "the optimizer step");
}

} // namespace

Run run_unchecked(const RunRequest& rq) {
  if (const auto linked = linked_request(rq)) return run_unchecked(*linked);
  ResolvedRequest resolved = resolve_request(rq);
  const CostSpec& costs = resolved.costs;
  const double mem_limit = resolved.mem_limit;
  const ScheduleInfo* info = resolved.info;
  Schedule schedule = std::move(resolved.schedule);
  // How far from optimal an automatic schedule is: the bound of one iteration's tasks at the
  // limit its generator worked under (an explicit --mem-limit, or its default).
  std::optional<CostBound> bound;
  double bound_limit = -1;
  // NOTE: the bound is of orders of separate F and B; overlapped cells may run below it.
  if (info != nullptr && info->automatic() && !resolved.combined()) {
    bound_limit = info->generation_limit(spec_of(rq, mem_limit, costs));
    const CostSpec planned = planning_costs(costs, rq.comm, schedule, Planning::bound);
    bound = cost_lower_bound(schedule, cost_model_for(planned, schedule), bound_limit);
  }
  if (rq.jitter.requested()) check_jitter(rq.jitter);
  // Samples need one iteration's schedule, which the run replaces by the K-fold one.
  std::optional<Schedule> one;
  if (rq.jitter.requested() && rq.iterations.requested()) one = schedule;
  const OffloadPlan offload = request_offload(rq, schedule, costs, mem_limit);
  const DataParallelSync dp = request_data_parallel(rq);
  // NOTE: the model's optimizer step when --optimizer-step leaves it at 0: every device waits
  // for the slowest (the all-reduce sync of the next iteration's start).
  IterationOptions iterations = rq.iterations;
  const Ticks step = request_optimizer_step(rq, schedule, costs);
  if (iterations.optimizer_step == 0) iterations.optimizer_step = step;
  if (dp.any() && rq.jitter.requested())
    throw ConfigError(fmt::format("--jitter with --dp {}: sampled runs do not model the "
                                  "data-parallel tail yet (leave one of them out)", dp.replicas));
  Run run = rq.iterations.requested()
                ? run_iterations(std::move(schedule), costs, iterations, rq.comm, dp)
                : run_schedule(std::move(schedule), costs, rq.comm, offload, dp, step);
  if (rq.offload.requested()) finish_offload_run(run, rq);
  run.mem_limit = mem_limit;
  run.time_parts = std::move(resolved.time_parts);
  if (rq.jitter.requested()) {
    run.samples = sample_run(one ? *one : run.schedule, run.costs, rq.comm, rq.iterations, rq.jitter);
    run.parameters.emplace_back(
        "jitter", fmt::format("cv {:g}, seed {}, {} samples", rq.jitter.cv, rq.jitter.seed,
                              rq.jitter.samples));
  }
  if (bound) {
    run.lower_bound = bound->cost;
    run.optimality_gap = optimality_gap(run.metrics.cost, bound->cost);
    run.bound_mem_limit = bound_limit;
    run.notes = std::move(resolved.notes);
  }
  if (rq.workload && rq.workload->training.overlap != OverlapMode::none) {
    const TrainingSpec& t = rq.workload->training;
    std::string text = fmt::format(
        "{}, {}", overlap_name(t.overlap),
        resolved.combined() ? "Combined 1F1B: each backward and the F after it as one cell, one more "
                            "F before the first backward"
                          : "the schedule's own overlapped cells from sub-operations");
    if (resolved.kept_apart > 0)
      text += fmt::format(", {} of {} backwards left out of the cell that would have "
                          "deadlocked",
                          resolved.kept_apart, resolved.kept_apart + resolved.cells);
    if (t.comm_streams == 1) text += ", one comm stream";
    if (resolved.combined() && run.schedule.chunks() == 1 && run.schedule.devices > 1)
      text += " (without chunks each cell waits for the next stage's cell of the same round: "
              "Megatron-Core runs it with PP > 1 only on interleaved schedules)";
    run.parameters.emplace_back("overlap", std::move(text));
  }
  if (rq.workload && (!rq.workload->recompute.empty() ||
                      rq.workload->model.recompute != Recompute::none))
    run.parameters.emplace_back("recompute", rq.workload->recompute.empty()
                                                 ? std::string(recompute_name(rq.workload->model.recompute))
                                                 : recompute_text(rq.workload->recompute));
  return run;
}

void check_memory(const RunRequest& rq, const Run& run) {
  const double mem_limit = run.mem_limit;
  const IterationOptions& iterations = rq.iterations;
  if (mem_limit >= 0) {
    for (const DeviceMetrics& d : run.metrics.per_device) {
      if (d.peak_memory > mem_limit + limits::kMemEps)
        throw InfeasibleError(fmt::format(
            "{}: device {} peaks at {} M_B, above --mem-limit {} ({} M_B)", run.schedule.name,
            d.device, human_number(d.peak_memory),
            rq.mem_limit.given() ? rq.mem_limit.text : "(the room left by the capacity)",
            human_number(mem_limit)));
    }
    // Overlapping iterations (post-validation) may hold more than one iteration's peak.
    const auto& peaks = run.iterations.peak_memory;
    for (std::size_t d = 0; d < peaks.size(); ++d) {
      if (peaks[d] > mem_limit + limits::kMemEps)
        throw InfeasibleError(fmt::format(
            "{}: device {} peaks at {} M_B over {} iterations ({}), above --mem-limit {} "
            "({} M_B)",
            run.schedule.name, d, human_number(peaks[d]), iterations.count,
            sync_name(iterations.sync), rq.mem_limit.text, human_number(mem_limit)));
    }
  }
  if (rq.mem_capacity_bytes > 0) {
    for (const DeviceMetrics& d : run.metrics.per_device) {
      if (d.peak_bytes <= rq.mem_capacity_bytes) continue;
      throw OutOfMemoryError(fmt::format(
          "{}: device {} needs {} (weights, gradients and optimizer state {} + activations {}), "
          "above the capacity of {}: out of memory{}",
          run.schedule.name, d.device, human_bytes(d.peak_bytes), human_bytes(d.state_bytes),
          human_bytes(d.peak_bytes - d.state_bytes), human_bytes(rq.mem_capacity_bytes),
          rq.workload && !rq.workload->recompute_auto && rq.workload->recompute.empty() &&
                  rq.workload->model.recompute != Recompute::full
              ? " (--recompute auto recomputes where it must)"
              : ""));
    }
  }
}

Run run_request(const RunRequest& rq) {
  if (rq.workload && rq.workload->recompute_auto) {
    RecomputeChoice choice = choose_recompute(rq);
    check_memory(choice.request, choice.run);
    return std::move(choice.run);
  }
  Run run = run_unchecked(rq);
  check_memory(rq, run);
  return run;
}

} // namespace ppsim
