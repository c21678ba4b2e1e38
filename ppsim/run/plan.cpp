// The planner: candidates, their simulation (over the cores, deterministic), the ranking.
#include "ppsim/run/plan.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <string_view>
#include <cstdint>
#include <tuple>

namespace ppsim {

namespace {

// The bytes a device has: --mem-capacity, or the device's own memory.
double plan_capacity(const PlanRequest& rq) {
  return rq.mem_capacity_bytes > 0 ? rq.mem_capacity_bytes
                                   : rq.workload.device.memory_gib * 1073741824.0;
}

struct Shape {
  std::string schedule;
  int chunks;
  int b;
  std::string layout;  // "" = the default split
  int slices;          // per micro-batch; 1 = none
};

// The slice counts plan tries for a schedule: seq1f1b and seq-zb-h1 2, 4 and 8 where each
// slice keeps kMinSliceTokens tokens (when named in --schedules, wherever a slice keeps one
// token), the rest none. Empty: the schedule is not tried (with one slice they are 1F1B and
// ZB-H1).
std::vector<int> slice_options(const ScheduleInfo& info, int seq, bool named) {
  if (!takes_slices(info)) return {1};
  std::vector<int> out;
  for (const int n : {2, 4, 8})
    if (seq / n >= (named ? 1 : kMinSliceTokens)) out.push_back(n);
  return out;
}

// Chunk counts a schedule accepts at p (looped schedules 1..4, V schedules 2, the rest 1).
std::vector<int> chunk_options(const ScheduleInfo& info, int p, int m) {
  std::vector<int> out;
  for (int v = 1; v <= 4; ++v) {
    const ScheduleSpec spec{.devices = p, .microbatches = m, .chunks = v};
    if (accepts(info, spec)) out.push_back(v);
  }
  return out;
}

// Layers moved off the first and last stages (which also hold the embedding and the loss) to the
// middle ones, `first` and `last` of them, from the default split of `layers` over `stages`.
std::string moved_layout(int layers, int stages, int first, int last) {
  Layout l = default_layout(layers, stages);
  if (stages < 3) return {};
  auto& f = l.stages.front().decoders;
  auto& e = l.stages.back().decoders;
  if (f < first || e < last) return {};
  f -= first;
  e -= last;
  int extra = first + last;
  for (int i = 1; extra > 0; i = i % (stages - 2) + 1, --extra) ++l.stages[static_cast<std::size_t>(i)].decoders;
  return layout_text(l);
}

// The candidate's run; false with the reason when it could not run.
bool simulate_candidate(const PlanRequest& rq, PlanCandidate& c, double capacity, Run* out) {
  try {
    const RunRequest run = candidate_request(rq, c);
    c.layout = layout_text(workload_layout(*run.workload, rq.devices, c.chunks));
    Run r = run_request(run);
    // NOTE: with --dp the iteration ends with the data-parallel tail, not the last task
    c.iteration_time_ms = ticks_to_ms(iteration_time(r));
    c.exposed_dp_ms = ticks_to_ms(r.metrics.exposed_dp);
    Ticks exposed = 0, inside = 0;
    for (const DeviceMetrics& d : r.metrics.per_device) {
      exposed += d.exposed_comm;
      inside += d.task_comm;
    }
    c.exposed_comm_ms = ticks_to_ms(exposed);
    c.task_comm_ms = ticks_to_ms(inside);
    c.cost_ms = ticks_to_ms(r.metrics.cost);
    c.bubble_rate = r.metrics.bubble_rate;
    c.peak_bytes = r.metrics.peak_bytes;
    c.activation_peak_bytes = r.metrics.peak_memory_bytes;
    c.device_peak_bytes.clear();
    for (const DeviceMetrics& d : r.metrics.per_device) c.device_peak_bytes.push_back(d.peak_bytes);
    c.fits = capacity <= 0 || c.peak_bytes <= capacity;
    c.reason.clear();
    if (!c.fits) {
      int worst = 0;
      for (std::size_t d = 0; d < c.device_peak_bytes.size(); ++d)
        if (c.device_peak_bytes[d] > c.device_peak_bytes[static_cast<std::size_t>(worst)]) worst = static_cast<int>(d);
      c.reason = fmt::format("out of memory: device {} needs {} of {}", worst,
                             human_bytes(c.peak_bytes), human_bytes(capacity));
    }
    if (out != nullptr) *out = std::move(r);
    return true;
  } catch (const Error& e) {
    c.fits = false;
    c.reason = e.what();
  } catch (const std::exception& e) {  // e.g. out of memory: a candidate, not the plan, failed
    c.fits = false;
    c.reason = fmt::format("could not run: {}", e.what());
  }
  return false;
}

// A run parameter's value by its key ("" when the run has none).
std::string parameter(const Run& r, std::string_view key) {
  for (const auto& [k, value] : r.parameters)
    if (k == key) return value;
  return {};
}

// The memory-limited search's limit a candidate ran under, when it ran one.
void keep_limit(PlanCandidate& c, const Run& r) {
  c.mem_limit = r.mem_limit >= 0 && takes_mem_limit(*find_schedule(c.schedule)) ? r.mem_limit : -1;
}

// `base` again with a knob set by `set`: simulated, its limit kept, measured against `base`;
// nullopt when it could not run or does not fit.
template <class Set>
std::optional<PlanCandidate> with_knob(const PlanRequest& rq, const PlanCandidate& base,
                                       double capacity, Run& r, Set&& set) {
  PlanCandidate c = base;
  c.mem_limit = -1;
  set(c);
  if (!simulate_candidate(rq, c, capacity, &r) || !c.fits) return std::nullopt;
  keep_limit(c, r);
  c.without_knob_ms = base.iteration_time_ms;
  return c;
}

// The shape as it is; when it does not fit in memory, with --recompute auto and (where the
// device has a host link) --offload auto; when it fits under a memory-limited search, with
// selective recomputation too, kept when that is faster.
std::vector<PlanCandidate> evaluate(const PlanRequest& rq, const Shape& sh, int global_per_replica,
                                    double capacity) {
  PlanCandidate c;
  c.schedule = sh.schedule;
  c.chunks = sh.chunks;
  c.slices = sh.slices;
  c.microbatch_size = sh.b;
  c.microbatches = global_per_replica / sh.b;
  c.layout = sh.layout;
  Run r;
  const bool ran = simulate_candidate(rq, c, capacity, &r);
  if (ran) keep_limit(c, r);
  if (ran && rq.workload.recompute_auto) c.recompute = parameter(r, "recompute");
  std::vector<PlanCandidate> out{c};
  // The all-to-alls of a mixture of experts overlapped: kept when faster.
  const TrainingSpec& t = rq.workload.training;
  if (ran && c.fits && rq.workload.model.moe() && t.ep > 1 && t.overlap == OverlapMode::none) {
    Run ro;
    auto o = with_knob(rq, c, capacity, ro, [](PlanCandidate& k) { k.overlap = "a2a"; });
    if (o && o->iteration_time_ms < c.iteration_time_ms) out.push_back(std::move(*o));
  }
  if (!ran || capacity <= 0 || rq.workload.recompute_auto || !rq.workload.recompute.empty()) return out;
  if (c.fits) {
    // A search under the memory it has room for may find a shorter order when each micro-batch
    // holds less: the same shape with selective recomputation, when the model has none.
    if (!takes_mem_limit(*find_schedule(c.schedule)) || rq.workload.model.recompute != Recompute::none)
      return out;
    auto s = with_knob(rq, c, capacity, r, [](PlanCandidate& k) { k.recompute = "selective"; });
    if (s && s->iteration_time_ms < c.iteration_time_ms) out.push_back(std::move(*s));
    return out;
  }
  auto k = with_knob(rq, c, capacity, r, [](PlanCandidate& x) { x.recompute = "auto"; });
  if (k) {
    k->recompute = parameter(r, "recompute");  // the choice auto made, per stage
    if (!k->recompute.empty() && k->recompute != "none") out.push_back(std::move(*k));
  }
  if (rq.workload.device.host_link_gbytes_per_s > 0) {
    auto o = with_knob(rq, c, capacity, r, [](PlanCandidate& x) { x.offload = "auto"; });
    if (o && r.offload.any()) {
      double fraction = 0;  // auto offloads one fraction of every activation
      for (const double f : r.offload.fraction) fraction = std::max(fraction, f);
      o->offload = fmt::format("{:g}", fraction);
      o->offloaded_bytes = r.metrics.host_peak_bytes;
      o->exposed_copy_ms = ticks_to_ms(r.metrics.exposed_copy);
      out.push_back(std::move(*o));
    }
  }
  return out;
}

// A shape's candidates as bytes (share_work), and back onto the end of `out`.
std::string encode_candidates(const std::vector<PlanCandidate>& cs) {
  detail::ByteWriter w;
  w.put(static_cast<std::uint64_t>(cs.size()));
  for (const PlanCandidate& c : cs) {
    for (const std::string* t : {&c.schedule, &c.layout, &c.recompute, &c.offload, &c.overlap,
                                 &c.reason})
      w.text(*t);
    for (const int x : {c.chunks, c.slices, c.microbatches, c.microbatch_size})
      w.put(static_cast<std::int32_t>(x));
    for (const double x : {c.mem_limit, c.without_knob_ms, c.offloaded_bytes, c.exposed_comm_ms,
                           c.task_comm_ms, c.exposed_copy_ms, c.iteration_time_ms,
                           c.exposed_dp_ms, c.cost_ms, c.bubble_rate, c.peak_bytes,
                           c.activation_peak_bytes})
      w.put(x);
    w.put(static_cast<std::uint64_t>(c.device_peak_bytes.size()));
    for (const double x : c.device_peak_bytes) w.put(x);
    w.put(static_cast<std::uint8_t>(c.fits ? 1 : 0));
  }
  return w.take();
}

void decode_candidates(std::string_view bytes, std::vector<PlanCandidate>& out) {
  detail::ByteReader in(bytes, "a candidate");
  const auto n = in.get<std::uint64_t>();
  if (n > bytes.size()) in.fail();  // each candidate takes bytes: a count beyond them is no list
  for (std::uint64_t k = 0; k < n; ++k) {
    PlanCandidate c;
    for (std::string* t : {&c.schedule, &c.layout, &c.recompute, &c.offload, &c.overlap,
                           &c.reason})
      *t = in.text();
    for (int* x : {&c.chunks, &c.slices, &c.microbatches, &c.microbatch_size})
      *x = in.get<std::int32_t>();
    for (double* x : {&c.mem_limit, &c.without_knob_ms, &c.offloaded_bytes, &c.exposed_comm_ms,
                      &c.task_comm_ms, &c.exposed_copy_ms, &c.iteration_time_ms,
                      &c.exposed_dp_ms, &c.cost_ms, &c.bubble_rate, &c.peak_bytes,
                      &c.activation_peak_bytes})
      *x = in.get<double>();
    const auto devices = in.get<std::uint64_t>();
    if (devices > bytes.size() / sizeof(double)) in.fail();
    c.device_peak_bytes.resize(static_cast<std::size_t>(devices));
    for (double& x : c.device_peak_bytes) x = in.get<double>();
    c.fits = in.get<std::uint8_t>() != 0;
    out.push_back(std::move(c));
  }
  in.finish();
}

// Simulates every shape over the cores (and the ranks); the results are in the shapes' order.
std::vector<PlanCandidate> evaluate_all(const PlanRequest& rq, const std::vector<Shape>& shapes,
                                        int per_replica, double capacity) {
  const std::vector<std::string> each = share_work(
      shapes.size(), rq.workers,
      [&](std::size_t i) { return encode_candidates(evaluate(rq, shapes[i], per_replica, capacity)); },
      rq.progress, "candidates");
  std::vector<PlanCandidate> out;
  for (const std::string& bytes : each) decode_candidates(bytes, out);
  return out;
}

// ", 4 balanced slices" for a sliced candidate, "" otherwise.
std::string slices_text(const PlanCandidate& c) {
  return c.slices > 1 ? fmt::format(", {} balanced slices", c.slices) : std::string();
}

// What slicing buys: the first sliced candidate that fits (the list is ranked) against the
// first 1f1b candidate of its micro-batch size that ran (the fastest that fits, if one does).
std::string slicing_note(const std::vector<PlanCandidate>& ranked) {
  const auto sliced = std::find_if(ranked.begin(), ranked.end(),
                                   [](const PlanCandidate& c) { return c.fits && c.slices > 1; });
  if (sliced == ranked.end()) {
    const bool tried = std::any_of(ranked.begin(), ranked.end(),
                                   [](const PlanCandidate& c) { return c.slices > 1; });
    return tried ? "seq1f1b and seq-zb-h1 with 2, 4 or 8 balanced slices: none fits" : "";
  }
  const PlanCandidate* base = nullptr;
  for (const PlanCandidate& c : ranked)
    if (c.schedule == "1f1b" && c.microbatch_size == sliced->microbatch_size && c.peak_bytes > 0) {
      base = &c;
      break;
    }
  std::string note = fmt::format("{}, {} balanced slices (b={}): {} ms per iteration, {} of "
                                 "activations on the fullest device",
                                 sliced->schedule, sliced->slices, sliced->microbatch_size,
                                 human_number(sliced->iteration_time_ms),
                                 human_bytes(sliced->activation_peak_bytes));
  if (base == nullptr || base->iteration_time_ms <= 0 || base->activation_peak_bytes <= 0)
    return note;
  return note + fmt::format("; {:+.1f}% iteration time, {:+.1f}% activation memory against 1f1b "
                            "at b={}{}",
                            100 * (sliced->iteration_time_ms - base->iteration_time_ms) /
                                base->iteration_time_ms,
                            100 * (sliced->activation_peak_bytes - base->activation_peak_bytes) /
                                base->activation_peak_bytes,
                            base->microbatch_size,
                            !base->fits                ? " (which does not fit)"
                            : !base->recompute.empty() ? " (which fits with recomputation)"
                            : !base->offload.empty()   ? " (which fits with --offload " + base->offload + ")"
                                                       : "");
}

bool ranks_before(const PlanCandidate& a, const PlanCandidate& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.fits && a.iteration_time_ms != b.iteration_time_ms)
    return a.iteration_time_ms < b.iteration_time_ms;
  const bool a_plain = a.recompute.empty() && a.offload.empty() && a.overlap.empty();
  const bool b_plain = b.recompute.empty() && b.offload.empty() && b.overlap.empty();
  if (a_plain != b_plain) return a_plain;
  return std::tie(a.schedule, a.chunks, a.slices, a.microbatches, a.layout, a.recompute, a.offload,
                  a.overlap) < std::tie(b.schedule, b.chunks, b.slices, b.microbatches, b.layout,
                                        b.recompute, b.offload, b.overlap);
}

} // namespace

RunRequest candidate_request(const PlanRequest& rq, const PlanCandidate& c) {
  RunRequest run;
  run.schedule = c.schedule;
  run.devices = rq.devices;
  run.microbatches = c.microbatches;
  run.chunks = c.chunks;
  run.slices = c.slices;
  if (c.slices > 1) run.slicing.mode = SlicingSpec::Mode::balanced;
  WorkloadSpec w = rq.workload;
  w.model.microbatch_size = c.microbatch_size;
  w.layout = c.layout;
  w.layers_per_stage.clear();
  if (!c.recompute.empty()) apply_recompute(w, parse_recompute(c.recompute, "plan: recompute"));
  if (c.overlap == "a2a") w.training.overlap = OverlapMode::a2a;
  run.workload = std::move(w);
  run.cost_overrides = rq.cost_overrides;
  if (c.mem_limit >= 0) run.mem_limit = MemLimit::of_units(c.mem_limit);
  // The searches use the memory the device has (--mem-capacity, or the device's own).
  run.fill_capacity_bytes = plan_capacity(rq);
  if (!c.offload.empty()) {
    // An offload fits the device's memory: `auto` searches against it.
    run.offload = parse_offload(c.offload);
    run.mem_capacity_bytes = run.fill_capacity_bytes;
  }
  return run;
}

Plan make_plan(const PlanRequest& rq) {
  const int p = rq.devices;
  // NOTE: a candidate that cannot run is a row with its reason, so bad input that every
  // candidate shares (-p, --costs) is refused here first, as bad input (exit 3), not as
  // "no candidate fits" (exit 5).
  if (p < 1 || p > limits::kMaxDevices)
    throw ConfigError(fmt::format("-p {}: expected 1 to {} devices", p, limits::kMaxDevices));
  if (!rq.cost_overrides.empty()) {
    CostSpec checked;
    apply_costs(checked, rq.cost_overrides);
  }
  const int dp = std::max(1, rq.workload.training.dp);
  if (rq.global_batch < 1 || rq.global_batch % dp != 0)
    throw ConfigError(fmt::format("plan: --global-batch {} must be a positive multiple of --dp {}",
                                  rq.global_batch, dp));
  const int per_replica = rq.global_batch / dp;
  std::vector<int> sizes;
  for (const int b : {1, 2, 4, 8, rq.workload.model.microbatch_size})
    if (per_replica % b == 0 && per_replica / b <= rq.max_microbatches &&
        std::find(sizes.begin(), sizes.end(), b) == sizes.end())
      sizes.push_back(b);
  std::sort(sizes.begin(), sizes.end());
  if (sizes.empty())
    throw ConfigError(fmt::format("plan: no micro-batch size of 1, 2, 4, 8 or {} divides {} "
                                  "sequences per replica into at most {} micro-batches",
                                  rq.workload.model.microbatch_size, per_replica,
                                  rq.max_microbatches));
  std::vector<const ScheduleInfo*> schedules;
  if (rq.schedules.empty()) {
    for (const ScheduleInfo& info : schedule_registry()) schedules.push_back(&info);
  } else {
    for (const std::string& name : rq.schedules) {
      const ScheduleInfo* info = find_schedule(name);
      if (info == nullptr)
        throw unknown_schedule(name, "plan");
      schedules.push_back(info);
    }
  }
  const double capacity = plan_capacity(rq);
  // Phase 1: every schedule, chunk count and micro-batch size on the default split.
  std::vector<Shape> shapes;
  const int seq = rq.workload.model.seq;
  for (const ScheduleInfo* info : schedules)
    for (const int b : sizes)
      for (const int v : chunk_options(*info, p, per_replica / b))
        for (const int n : slice_options(*info, seq, !rq.schedules.empty()))
          shapes.push_back(Shape{std::string(info->name), v, b, "", n});
  // The work bound: every shape, and the layer moves of phase 2 (at most 6 x 8 more shapes,
  // each counted as the largest).
  double tasks = 0, largest = 0;
  for (const Shape& sh : shapes) {
    const double t = estimated_run_tasks(sh.schedule, p, sh.chunks, per_replica / sh.b) * sh.slices;
    tasks += t;
    largest = std::max(largest, t);
  }
  check_command_work(tasks + 48 * largest, fmt::format("-p {}", p),
                     fmt::format("{} candidates of p x v x m x 3 tasks, x20 for an automatic "
                                 "schedule's search, up to 48 more with layers moved",
                                 shapes.size()),
                     "fewer devices, a smaller --global-batch, or --schedules naming fewer");
  Plan plan;
  plan.capacity_bytes = capacity;
  plan.candidates = evaluate_all(rq, shapes, per_replica, capacity);
  // Phase 2: the best few that fit, with layers moved off the first and last stages.
  std::vector<PlanCandidate> sorted = plan.candidates;
  std::stable_sort(sorted.begin(), sorted.end(), ranks_before);
  std::vector<Shape> moved;
  std::set<std::tuple<std::string, int, int, int, std::string>> seen;
  for (std::size_t i = 0; i < sorted.size() && i < 6 && sorted[i].fits; ++i) {
    const PlanCandidate& c = sorted[i];
    const int stages = p * c.chunks;
    for (const int first : {0, 1, 2})
      for (const int last : {0, 1, 2}) {
        if (first == 0 && last == 0) continue;
        const std::string text = moved_layout(rq.workload.model.layers, stages, first, last);
        if (text.empty() ||
            !seen.emplace(c.schedule, c.chunks, c.slices, c.microbatch_size, text).second)
          continue;
        moved.push_back(Shape{c.schedule, c.chunks, c.microbatch_size, text, c.slices});
      }
  }
  for (PlanCandidate& c : evaluate_all(rq, moved, per_replica, capacity))
    plan.candidates.push_back(std::move(c));
  plan.simulated = plan.candidates.size();
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(), ranks_before);
  if (!plan.candidates.empty() && plan.candidates.front().fits) {
    plan.best = 0;
    const PlanCandidate& w = plan.candidates.front();
    const PlanCandidate* runner = nullptr;
    for (const PlanCandidate& c : plan.candidates)
      if (c.fits && c.schedule != w.schedule) {
        runner = &c;
        break;
      }
    plan.why = fmt::format("{} (v={}, m={}, b={}{}) is the fastest that fits: {} ms per iteration, "
                           "bubble {:.1f}%, the fullest device at {} of {}",
                           w.schedule, w.chunks, w.microbatches, w.microbatch_size, slices_text(w),
                           human_number(w.iteration_time_ms), 100 * w.bubble_rate,
                           human_bytes(w.peak_bytes), human_bytes(capacity));
    const double more = w.without_knob_ms > 0
                            ? 100 * (w.iteration_time_ms - w.without_knob_ms) / w.without_knob_ms
                            : 0.0;
    if (!w.recompute.empty())
      plan.why += w.without_knob_ms > w.iteration_time_ms
                      ? fmt::format("; with --recompute {}, {:+.1f}% time against the same shape "
                                    "without it (whose search has less room)",
                                    w.recompute, more)
                      : fmt::format("; it fits only with --recompute {}, {:+.1f}% time over the "
                                    "same shape without it",
                                    w.recompute, more);
    if (!w.offload.empty())
      plan.why += fmt::format("; it fits only with --offload {}: {} of activations per device on "
                              "the host, {} ms of copies exposed, {:+.1f}% time over the same "
                              "shape without it",
                              w.offload, human_bytes(w.offloaded_bytes),
                              human_number(w.exposed_copy_ms), more);
    if (!w.overlap.empty()) {
      const double total = w.task_comm_ms;
      const double hidden = total > 0 ? 100 * (total - w.exposed_comm_ms) / total : 0.0;
      plan.why += fmt::format("; with --overlap {}, {} hides {:.0f}% of the all-to-alls ({} of {} ms "
                              "summed over the devices stay exposed), {:+.1f}% time against the "
                              "same shape without it",
                              w.overlap, w.schedule.starts_with("dualpipe") ? "DualPipe's cells" : "Combined 1F1B",
                              hidden, human_number(w.exposed_comm_ms), human_number(total), more);
    }
    if (runner != nullptr)
      plan.why += fmt::format("; {:.1f}% faster than the best other schedule, {} (v={}, m={}{}), "
                              "bubble {:.1f}%",
                              100 * (runner->iteration_time_ms - w.iteration_time_ms) /
                                  runner->iteration_time_ms,
                              runner->schedule, runner->chunks, runner->microbatches, slices_text(*runner),
                              100 * runner->bubble_rate);
  } else {
    plan.why = capacity > 0 ? "no candidate fits in memory, not even with full recomputation: use more "
                              "devices, a smaller micro-batch, --tp or --zero 1"
                            : "no candidate could run";
  }
  plan.slicing = slicing_note(plan.candidates);
  return plan;
}

namespace {

std::vector<int> divisors_of(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

std::string shape_text(const ParallelShape& s, bool moe) {
  return moe ? fmt::format("pp={} tp={} dp={} ep={}", s.pp, s.tp, s.dp, s.ep)
             : fmt::format("pp={} tp={} dp={}", s.pp, s.tp, s.dp);
}

} // namespace

std::vector<ParallelShape> parallel_shapes(const ParallelRequest& rq) {
  const ModelSpec& model = rq.base.workload.model;
  const int n = rq.gpus;
  // NOTE: the largest a layout's dimensions reach: pp and ep within kMaxDevices, dp within
  // kMaxReplicas, so N is bounded by their product's useful part, kMaxDevices x kMaxReplicas
  // would overflow an int: --gpus is bounded by kMaxReplicas (a million devices).
  if (n < 1 || n > limits::kMaxReplicas)
    throw ConfigError(fmt::format("--gpus {}: expected 1..{}", n, limits::kMaxReplicas));
  for (const auto& [name, v] : {std::pair{"-p", rq.fixed_pp}, {"--tp", rq.fixed_tp},
                                {"--dp", rq.fixed_dp}, {"--ep", rq.fixed_ep}})
    if (v < 0 || v > n)
      throw ConfigError(fmt::format("{} {} with --gpus {}: expected 1..{}", name, v, n, n));
  const int per_node = std::max(1, rq.base.workload.device.gpus_per_node);
  const int kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
  std::vector<ParallelShape> out;
  for (const int pp : divisors_of(n)) {
    if (rq.fixed_pp > 0 ? pp != rq.fixed_pp : (pp > model.layers || pp > limits::kMaxDevices))
      continue;
    for (const int tp : divisors_of(n / pp)) {
      if (rq.fixed_tp > 0 ? tp != rq.fixed_tp
                          : (tp > per_node || model.heads % tp != 0 || kv % tp != 0))
        continue;
      const int dp = n / pp / tp;
      if (rq.fixed_dp > 0 && dp != rq.fixed_dp) continue;
      if (rq.fixed_dp == 0 && rq.base.global_batch % dp != 0) continue;
      std::vector<int> eps{1};
      if (rq.fixed_ep > 0) {
        eps = {rq.fixed_ep};
      } else if (model.moe()) {
        eps.clear();
        for (const int ep : divisors_of(dp * tp))
          if (model.experts % ep == 0 && ep <= limits::kMaxDevices) eps.push_back(ep);
      }
      for (const int ep : eps) {
        out.push_back(ParallelShape{pp, tp, dp, ep});
        if (out.size() > kMaxParallelShapes)
          throw ConfigError(fmt::format(
              "--gpus {}: more than {} layouts of pp x tp x dp{} to plan: fix one of them "
              "(-p, --tp, --dp{})",
              n, kMaxParallelShapes, model.moe() ? " x ep" : "", model.moe() ? ", --ep" : ""));
      }
    }
  }
  if (out.empty())
    throw ConfigError(fmt::format(
        "--gpus {}: no layout pp x tp x dp = {} fits the constraints (pp at most the {} layers, "
        "tp within a node of {} dividing the {} heads and {} KV heads, dp dividing the global "
        "batch {}{})",
        n, n, model.layers, per_node, model.heads, kv, rq.base.global_batch,
        rq.fixed_pp + rq.fixed_tp + rq.fixed_dp + rq.fixed_ep > 0 ? ", and the dimensions given"
                                                                   : ""));
  return out;
}

PlanRequest layout_request(const PlanRequest& base, const ParallelShape& shape) {
  PlanRequest one = base;
  one.devices = shape.pp;
  one.workload.training.tp = shape.tp;
  one.workload.training.dp = shape.dp;
  one.workload.training.ep = shape.ep;
  return one;
}

ParallelPlan make_parallel_plan(const ParallelRequest& rq) {
  const std::vector<ParallelShape> shapes = parallel_shapes(rq);
  const bool moe = rq.base.workload.model.moe();
  ParallelPlan out;
  std::optional<ConfigError> first_refusal;
  std::vector<Plan> plans;  // per row, in search order
  for (const ParallelShape& shape : shapes) {
    const PlanRequest one = layout_request(rq.base, shape);
    ParallelRow row;
    row.shape = shape;
    Plan plan;
    try {
      plan = make_plan(one);
    } catch (const ConfigError& e) {
      if (!first_refusal) first_refusal.emplace(fmt::format("{}: {}", shape_text(shape, moe), e.what()));
      row.reason = e.what();
      out.rows.push_back(std::move(row));
      plans.emplace_back();
      continue;
    }
    row.simulated = plan.simulated;
    out.simulated += plan.simulated;
    row.fits = plan.best >= 0;
    if (!plan.candidates.empty()) row.best = plan.candidates[plan.best >= 0 ? ix(plan.best) : 0];
    if (!row.fits) row.reason = plan.why;
    out.rows.push_back(std::move(row));
    plans.push_back(std::move(plan));
  }
  if (out.simulated == 0 && first_refusal) throw *first_refusal;
  // Rank: fitting rows by iteration time, then the layout; the others keep the search order.
  std::vector<std::size_t> order(out.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const ParallelRow& x = out.rows[a];
    const ParallelRow& y = out.rows[b];
    if (x.fits != y.fits) return x.fits;
    if (!x.fits) return false;
    if (x.best.iteration_time_ms != y.best.iteration_time_ms)
      return x.best.iteration_time_ms < y.best.iteration_time_ms;
    return std::tie(x.shape.pp, x.shape.tp, x.shape.dp, x.shape.ep) <
           std::tie(y.shape.pp, y.shape.tp, y.shape.dp, y.shape.ep);
  });
  std::vector<ParallelRow> rows;
  rows.reserve(order.size());
  for (const std::size_t i : order) rows.push_back(std::move(out.rows[i]));
  out.rows = std::move(rows);
  // The plan shown whole: the winner's, else the first layout that ran.
  std::size_t shown = order.size();
  for (std::size_t r = 0; r < order.size() && shown == order.size(); ++r)
    if (!plans[order[r]].candidates.empty()) shown = r;
  if (shown < order.size()) {
    out.plan = std::move(plans[order[shown]]);
    out.plan_shape = out.rows[shown].shape;
  }
  if (!out.rows.empty() && out.rows.front().fits) {
    out.best = 0;
    const ParallelRow& w = out.rows.front();
    if (out.rows.size() < 2 || !out.rows[1].fits) {
      out.why = fmt::format("{}: {}", shape_text(w.shape, moe), out.plan.why);
    } else {
      const ParallelRow& r = out.rows[1];
      out.why = fmt::format("{} on {}: {} (v={}, m={}, b={}), {} ms per iteration; {:.1f}% faster "
                            "than the best other layout, {}: {} (v={}, m={}, b={}), {} ms",
                            shape_text(w.shape, moe), rq.gpus, w.best.schedule, w.best.chunks,
                            w.best.microbatches, w.best.microbatch_size,
                            human_number(w.best.iteration_time_ms),
                            100 * (r.best.iteration_time_ms - w.best.iteration_time_ms) /
                                r.best.iteration_time_ms,
                            shape_text(r.shape, moe), r.best.schedule, r.best.chunks,
                            r.best.microbatches, r.best.microbatch_size,
                            human_number(r.best.iteration_time_ms));
    }
  } else {
    out.why = fmt::format("no layout of {} devices fits: {}", rq.gpus,
                          out.rows.empty() ? std::string("none to try") : out.rows.front().reason);
  }
  return out;
}

} // namespace ppsim
