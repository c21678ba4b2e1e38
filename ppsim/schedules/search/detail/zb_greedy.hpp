// The zero-bubble authors' scheduling heuristic (Qi et al., Zero Bubble Pipeline Parallelism,
// ICLR 2024, sec. 3.1; their auto_schedule.py), placed and timed in one pass in integer ticks, on
// one stage per device or, generalised, on a loop placement with v chunks per device.
//
// With one chunk it is the authors' heuristic exactly (costs, failures and order of every flag
// combination; tests/schedules/zb_auto_test.cpp pins them). With v chunks (ppsim's design) each
// device runs its F, and its B, in Megatron's chunk order (groups of micro-batches, chunk by
// chunk; backwards last chunk first); a device's k-th F or B takes the place of micro-batch k of
// the authors' stage in their rounds, and its input comes from the device before it, or across
// the loop from device p-1 (F) or device 0 (B).
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/time.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace ppsim::detail {

/// The three decisions the authors search over (their names).
struct ZbFlags {
  bool allow_bubble_before_first_b{true};  ///< warm-up F must end by the first B's arrival
                                           ///< (true) or may overrun it by one F (false)
  bool prioritize_b{true};      ///< a device >= 2 F ahead of the next may skip its F this round
  bool no_bubble_greedy{true};  ///< a gap shorter than a W, within the budget, still gets a W
  friend bool operator==(const ZbFlags&, const ZbFlags&) = default;
};

/// The authors' 8 combinations in their search order: (T,T,T), (T,T,F), (T,F,T), ... (F,F,F).
[[nodiscard]] std::array<ZbFlags, 8> zb_flag_combinations();

/// ppsim's variations of the rules; the defaults are the authors' heuristic.
struct ZbRules {
  /// Extra warm-up F per device over the heuristic's count, clamped to what memory and the
  /// order allow (a negative value removes some).
  int warmup_offset{0};
  /// The W budget compares a gap with (max bubble - own bubble) of this many per mille of it.
  /// 1000 is the authors' rule.
  int budget_permille{1000};
  /// An F leaves room for the rise of the device's next B (when W needs more than B left).
  bool reserve_b{false};
  friend bool operator==(const ZbRules&, const ZbRules&) = default;
};

template <bool kChunked> class ZbRun;

/// The shape and costs the heuristic reads: a loop placement (stage c*p + d on device d), per
/// stage durations and memory deltas, the chunk order of its rules. Built once, shared by runs.
class ZbProblem {
public:
  /// `skeleton` must have a loop placement; `costs` are expanded over its stages. `group` is the
  /// number of micro-batches per group of the chunk order (Megatron's is p, 0 = p): with v chunks
  /// a device runs chunk 0 of a group, then chunk 1 of it, ... (backwards: last chunk first).
  /// Smaller groups need less warm-up memory, larger ones fill the pipeline longer. At most m;
  /// ignored with one chunk.
  ZbProblem(const Schedule& skeleton, const CostModel& costs, int group = 0);

  [[nodiscard]] int devices() const { return p_; }
  [[nodiscard]] int chunks() const { return v_; }
  [[nodiscard]] int microbatches() const { return m_; }
  [[nodiscard]] int group() const { return group_; }
  /// The work of the busiest device, a lower bound of every schedule's cost.
  [[nodiscard]] Ticks busiest() const;
  /// The memory the heuristic's warm-up needs on a device before its first B (M_B units).
  [[nodiscard]] double warmup_memory() const;
  /// A lower bound of the cost of any schedule that keeps its micro-batches in order within
  /// `limit`: device d holds at most k = limit / M_B of its first chunk between an F and its B,
  /// so F(d, j + k) waits for a round trip from F(d, j).
  [[nodiscard]] Ticks memory_bound(double limit) const;

private:
  template <bool> friend class ZbRun;
  int p_{0}, v_{0}, m_{0}, group_{0};
  Ticks comm_{0};
  std::vector<Ticks> dur_;     ///< [stage * 3 + kind] for F, B, W
  std::vector<double> mem_;    ///< [stage * 3 + kind]
  std::vector<Ticks> busy_;    ///< per device
  // the chunk order, the same on every device (index k of a device's k-th F or B)
  std::vector<int> f_chunk_, f_mb_, f_prev_;  ///< F: chunk, micro-batch, index of (chunk-1, mb)
  std::vector<int> b_chunk_, b_mb_, b_prev_, b_own_f_;  ///< B: ..., of (chunk+1, mb), own F
};

/// How one run ended.
enum class ZbStatus : std::uint8_t {
  ok,
  cannot_fit,  ///< the authors' "Cannot fit memory" (or their assert): memory over the limit
  abandoned,   ///< it could only end worse than the cutoff
  stuck,       ///< (chunks only) a device's next task lacks an input the rounds have not placed
};

/// The outcome of one run of the heuristic.
struct ZbOutcome {
  ZbStatus status{ZbStatus::ok};
  Ticks cost{0};   ///< max over devices of the span (last end - first start); ok only
  Ticks spans{0};  ///< sum of the devices' spans; ok only
  double peak{0};  ///< the highest memory any device reached
  /// The largest memory value a limit test accepted: the run (up to where it ended) is the same
  /// for every limit in [accepted, limit]. Below it, the next limit that can differ.
  double accepted{0};
  long long placed{0};  ///< tasks placed before the run ended
  /// Which flags changed a decision (bits: 1 allow_bubble_before_first_b, 2 prioritize_b,
  /// 4 no_bubble_greedy): a run whose flags differ from this one's only outside these bits is
  /// the same run, up to where this one ended.
  std::uint8_t decisive{0};
};

/// What a run placed, when asked: per device its tasks in order and their end times.
struct ZbRecord {
  std::vector<std::vector<Task>> order;
  std::vector<std::vector<Ticks>> end;
};

/// When a run gives up: once its (cost, sum of spans) can only end worse than `worse_than`, or
/// no better than `no_better_than`. Each device's span is at least its work plus the idle it has
/// had so far.
struct ZbCutoff {
  Ticks worse_cost{std::numeric_limits<Ticks>::max()};
  Ticks worse_spans{std::numeric_limits<Ticks>::max()};
  Ticks tie_cost{std::numeric_limits<Ticks>::max()};
  Ticks tie_spans{std::numeric_limits<Ticks>::max()};
};

/// The state of a run, kept between runs so that a search does not allocate it for each.
struct ZbWorkspace {
  std::vector<int> f, b, w, req;
  std::vector<Ticks> e, start, bubble, end_f, end_b;
  std::vector<double> mem;
};

/// One run of the heuristic at memory limit `limit` (M_B per device); it stops (abandoned) as
/// `cutoff` says. Fills `record` when given.
///
///   const ZbProblem problem(skeleton, costs);  // make_pipeline(.., loop_placement(p, 1))
///   const ZbOutcome o = run_zb(problem, 2.0 * p, ZbFlags{}, ZbRules{});  // ZB-2p, flags T,T,T
[[nodiscard]] ZbOutcome run_zb(const ZbProblem& problem, double limit, const ZbFlags& flags,
                               const ZbRules& rules, const ZbCutoff& cutoff = {},
                               ZbRecord* record = nullptr,
                               ZbWorkspace* workspace = nullptr);

/// The schedule a record describes, on the problem's placement, named `name`.
[[nodiscard]] Schedule schedule_of(const ZbProblem& problem, ZbRecord record, std::string name);

/// The authors' search at one limit: the 8 combinations, the lowest cost kept (the first of
/// equal ones), a combination that cannot fit skipped. nullopt when none fits.
struct ZbChoice {
  ZbFlags flags;
  ZbOutcome outcome;
};
[[nodiscard]] std::optional<ZbChoice> zb_authors_choice(const ZbProblem& problem, double limit);

} // namespace ppsim::detail
