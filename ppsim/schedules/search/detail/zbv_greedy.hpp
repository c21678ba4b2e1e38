// Private machinery of the V schedules: the zero-bubble authors' ZB-V greedy on ppsim's V
// placement, re-implemented natively (integer ticks, every task placed and timed in one pass),
// and ppsim's search on top of it (variants, a ladder of memory limits, a list scheduler, swaps).
#pragma once

#include "ppsim/schedules/search/detail/search.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace ppsim::detail {

/// The greedy's six task kinds per device, in the authors' indexing: F0 F1 B0 B1 W0 W1. Their
/// "chunk" 0 flows to higher device indices and chunk 1 back, for F and for B alike: F0 is the
/// forward of the device's stage d, F1 of its stage 2p-1-d; B0 is the backward of stage 2p-1-d
/// (it starts on device 0 after the loss), B1 of stage d; W0 / W1 follow B0 / B1.
enum VKind : int { kF0 = 0, kF1 = 1, kB0 = 2, kB1 = 3, kW0 = 4, kW1 = 5 };
inline constexpr int kVKinds = 6;

/// What the greedy needs of a V-placed schedule and its costs, per device and kind.
struct VProblem {
  int devices{0};
  int microbatches{0};
  Ticks comm{0}; ///< per cross-device edge; the V's two turns are on one device and free
  std::vector<std::array<int, kVKinds>> stage;      ///< ppsim stage of [device][kind]
  std::vector<std::array<Ticks, kVKinds>> duration; ///< [device][kind]
  std::vector<std::array<double, kVKinds>> memory;  ///< memory delta, M_B units
};

/// The problem of `skeleton` (a V placement from vshape_placement, one route) under `costs`.
/// Throws ConfigError when the sum of all durations and messages could overflow Ticks.
[[nodiscard]] VProblem make_v_problem(const Schedule& skeleton, const CostModel& costs);

/// The neighbour balancing after the warm-up: arxiv's `v_schedule.py` evens out the devices'
/// forward counts; main's `zbv.py` also makes each device run more chunk-1 forwards than the
/// device before it (which keeps arxiv's from failing at 2p M_B with comm).
enum class VBalance : std::uint8_t { arxiv, main };

/// One flag combination of the greedy, plus the knobs ppsim searches on top.
struct ZbvOptions {
  bool fill_b{true}; ///< a gap over the W budget before a chunk-0 B gets one W
  bool fill_f{true}; ///< a gap over the W budget before an F gets one W
  VBalance balance{VBalance::main};
  /// Device d's warm-up forwards stop when its memory plus (warmup_room + 2d) chunk activations
  /// would exceed the limit; the authors keep room for 2 + 2d. At most 7.
  int warmup_room{2};
  /// ppsim's extension: where the authors' code fails (a task over the limit with no W left to
  /// make room, a task whose input is not placed yet), skip that task for now and go on in
  /// rounds until every task is placed. Identical to theirs wherever theirs succeeds.
  bool adaptive{false};
  /// ppsim's: an F leaves room for one B's raise of memory (only matters when M_W > M_B).
  bool reserve_b{false};
  /// zbv_pass's abort looks at device 0 only (whose span only grows when comm is added).
  bool abort_on_first_device{false};
};

/// The greedy's memory tests pass when the memory is at most the cap: the limit plus a rounding
/// allowance for sums of M_B fractions, the run layer's.
[[nodiscard]] inline double memory_cap(double limit) {
  return limit + 1e-9;
}

/// The caps under which the greedy takes exactly the same decisions: every memory test it made
/// has the same outcome for any cap in [from, below).
struct LimitRange {
  double from{-std::numeric_limits<double>::infinity()};
  double below{std::numeric_limits<double>::infinity()};
};

/// Which options a greedy run depended on. A run whose options differ from another's only in
/// options that run never used takes exactly the same decisions (at every cap of its range).
struct VKnobsUsed {
  bool fill_b{false};   ///< a chunk-0 B met a gap over the budget with a W pending
  bool fill_f{false};   ///< an F met a gap over the budget with a W pending
  bool balance{false};  ///< main's extra balancing condition decided a sweep
  bool adaptive{false}; ///< a task was skipped where the authors' code fails
  /// Bit r set: warmup_room = r decides every warm-up test alike at this cap (only at this cap).
  std::uint8_t rooms{0xff};
};

/// A task of a V run's device order in 32 bits: its VKind and its micro-batch.
[[nodiscard]] constexpr std::uint32_t v_task(int kind, int microbatch) {
  return static_cast<std::uint32_t>(kind) | (static_cast<std::uint32_t>(microbatch) << 3);
}
[[nodiscard]] constexpr int v_kind_of(std::uint32_t task) { return static_cast<int>(task & 7u); }
[[nodiscard]] constexpr int v_microbatch_of(std::uint32_t task) { return static_cast<int>(task >> 3); }

/// A greedy pass's result, timed by the greedy itself.
struct VRun {
  /// Per device, the tasks in order (v_task).
  std::vector<std::vector<std::uint32_t>> order;
  /// The device of every placement in the order the greedy placed them (a topological order of
  /// the task graph), for re-timing under other costs.
  std::vector<std::int32_t> sequence;
  std::vector<Ticks> bubble; ///< per device, idle time after its first task (the authors')
  Ticks max_bubble{0};
  Score score;           ///< ppsim's (cost, sum of spans) under the problem's costs
  double peak_memory{0}; ///< highest running memory of any device, M_B units

  /// The placement step every V pass shares: `kind` of micro-batch `microbatch` next on device
  /// d, whose running memory `memory` (M_B) changes by `delta`; the peak follows.
  void place(int d, int kind, int microbatch, double& memory, double delta) {
    memory += delta;
    peak_memory = std::max(peak_memory, memory);
    order[static_cast<std::size_t>(d)].push_back(v_task(kind, microbatch));
    sequence.push_back(d);
  }
};

/// One option combination: the passes of the authors' try_v_schedule.
struct VOutcome {
  std::vector<VRun> passes; ///< every pass that succeeded, in order (each a valid schedule)
  /// The authors' answer among the passes (the last whose largest bubble fell), or -1 when a
  /// pass failed where their code asserts (memory, a task before its input) or loops forever.
  int best{-1};
  LimitRange valid; ///< caps that give this same outcome, success or failure
  VKnobsUsed used;  ///< over all passes
  [[nodiscard]] const VRun* result() const {
    return best >= 0 ? &passes[static_cast<std::size_t>(best)] : nullptr;
  }
};

/// The authors' try_v_schedule for one option combination at memory cap `cap`: a greedy pass,
/// then re-runs with the previous pass's per-device bubbles approved while the largest bubble
/// strictly falls; the answer is the pass with the smallest largest bubble.
[[nodiscard]] VOutcome zbv_greedy(const VProblem& problem, double cap, const ZbvOptions& options);

/// One greedy pass with no bubbles approved; nullopt when it fails, or as soon as some device's
/// work plus its idle so far reaches `abort_at` (it cannot cost less than that any more).
/// `range`, when given, receives the caps that take the same decisions (up to the abort).
[[nodiscard]] std::optional<VRun> zbv_pass(const VProblem& problem, double cap,
                                           const ZbvOptions& options, Ticks abort_at,
                                           LimitRange* range = nullptr, VKnobsUsed* used = nullptr,
                                           WorkBudget* budget = nullptr);

/// The authors' ZB-V (arxiv `v_schedule.py` or main `zbv.py`): the four fill_b x fill_f
/// combinations, the strictly smallest largest bubble wins (first on a tie). NOTE: a combination
/// that fails is skipped, where the authors' code fails the whole call.
[[nodiscard]] std::optional<VRun> zbv_authors(const VProblem& problem, double cap,
                                              VBalance balance);

/// The choices of ppsim's list scheduler on the V (v_list_pass).
struct VListOptions {
  bool b1_first{true};  ///< between two ready B of one micro-batch age, chunk 1's first
  bool f1_first{true};  ///< between two ready F, the chunk-1 one (finishing a forward) first
  bool eager_w{false};  ///< a W also into a wait shorter than it
  bool reserve_b{true}; ///< an F leaves room for one B's raise (when B raises memory)
  /// a new micro-batch (F0) only while fewer than this many are in flight on the device
  /// (started, not yet through their last backward there); 0 = no such bound
  int inflight{0};
};

/// A variant that ppsim searches: the greedy's options, and whether it decides as if comm were
/// 0 (the paper's ZB-V pattern), its order then timed with the real comm.
struct ZbvVariant {
  ZbvOptions options;
  bool comm0{false};
  /// The authors' passes first (try_v_schedule, never dropped early); false: only ppsim's one
  /// adaptive pass, dropped as soon as it cannot beat the best so far.
  bool authors{true};
  /// Instead of the authors' greedy, ppsim's list scheduler with these options (one pass).
  std::optional<VListOptions> list;
};

/// What zbv_search found.
struct ZbvFound {
  std::optional<VRun> best; ///< scored under the real costs
  int variant{-1};          ///< index of the variant that found it
  double cap{0};            ///< the cap it was found at
  int passes{0};            ///< greedy passes run (work done)
  bool budget_ended{false}; ///< the work budget ended the search (best is the best so far)
};

/// Where zbv_search may stop: at a cost nothing can beat (the lower bound of the problem's
/// tasks at the largest cap; the ideal when higher), and when its budget (if any) ends, each
/// pass taking the problem's task count.
struct ZbvStops {
  Ticks floor{0};
  WorkBudget* budget{nullptr};
};

/// ppsim's search on the greedy: every variant at every cap of `caps` (from the largest down),
/// the authors' passes of it (try_v_schedule, with the variant's options) all candidates; where
/// those fail, one adaptive pass (reserving room for B's raise when B raises memory), dropped
/// as soon as it cannot beat the best so far. The best by (score, order found). A variant at a
/// cap is skipped when an earlier run differs from it only in options that run never used, at
/// a cap of that run's range (the same decisions). Stops early when a candidate's cost is the
/// ideal (the busiest device's work) or stops.floor, which nothing can beat, and before a pass
/// the budget has no room for.
/// With `swaps_per_cap` > 0, each cap's best is then improved by improve_by_swaps (a candidate
/// of variant index variants.size()), and no pass is dropped early.
[[nodiscard]] ZbvFound zbv_search(const VProblem& problem, const std::vector<double>& caps,
                                  const std::vector<ZbvVariant>& variants,
                                  long long swaps_per_cap = 0, const ZbvStops& stops = {});

/// The caps of the ladder up to `cap`: `least`, the caps of the limits k * step above it and
/// below `cap`, and `cap` itself. The ladder of a limit on the grid is a part of every larger
/// limit's, so a larger limit never finds worse than a smaller one on the grid.
[[nodiscard]] std::vector<double> ladder_caps(double least, double cap, double step);

/// ppsim's list scheduler on the V (not the authors'): the device that can act earliest acts;
/// it runs a ready B (the older micro-batch first), else a ready F that fits in memory with
/// room for one B's raise, else a pending W when the wait for its next known input is at least
/// the W (or eager_w, or memory is full), else waits. nullopt when it gets stuck or as soon as
/// a device's work plus its idle so far reaches `abort_at`.
[[nodiscard]] std::optional<VRun> v_list_pass(const VProblem& problem, double cap,
                                              const VListOptions& options, Ticks abort_at);

/// The busiest device's work: no schedule of the problem costs less.
[[nodiscard]] Ticks ideal_cost(const VProblem& problem);

/// The V one micro-batch at a time: each micro-batch's forwards down and back, then its
/// backwards, each W right after its B. Slow, but its peak is the least per-device memory any
/// split order on the V placement meets: one micro-batch's activations on both of a device's
/// stages, or, when B raises memory (M_W > M_B), the first backward's W still pending beside the
/// other stage's activation.
[[nodiscard]] VRun v_one_at_a_time(const VProblem& problem);

/// The score of run's order re-timed under `problem`'s costs (as soon as possible, in order).
[[nodiscard]] Score retime(const VProblem& problem, const VRun& run);

/// Local search on run's order: swaps of neighbouring tasks on a device (never two of one kind,
/// which keep their micro-batch order, nor two of one micro-batch), each kept when it lowers
/// the score under `problem`'s costs, does not deadlock and keeps every device's memory within
/// `cap`; first improvement, device by device, at most `evaluations` re-timings. Returns
/// whether it improved.
bool improve_by_swaps(const VProblem& problem, VRun& run, double cap, long long evaluations);

/// The run's order as tasks of `skeleton`'s placement (and its name).
[[nodiscard]] Schedule to_schedule(const VProblem& problem, const VRun& run,
                                   const Schedule& skeleton);

} // namespace ppsim::detail
