// The schedule generators by name, with their constraints.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/schedule.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// What a generator needs: the shape, and for cost- or memory-aware schedules the costs and the
/// memory limit.
struct ScheduleSpec {
  int devices{0};       ///< p, pipeline ranks
  int microbatches{0};  ///< m
  int chunks{0};        ///< v, stages per device; 0 = the schedule's default
  /// Sequence slices per micro-batch (Seq1F1B): the schedule then has m x slices micro-batch
  /// indices, u being slice u % slices of micro-batch u / slices. Only seq1f1b takes more than 1.
  int slices{1};
  double mem_limit{-1};  ///< activation memory limit per device in M_B units; < 0 = default
  const CostSpec* costs{nullptr};  ///< for cost-aware generators; null = unit costs
  /// Where a generator says what the run's reader should know (a search that ended at its work
  /// budget); null = nobody asks.
  std::vector<std::string>* notes{nullptr};
  /// The work an automatic V generator may spend (limits::kMaxSearchWork's units).
  long long work_budget{limits::kMaxSearchWork};
};

/// One rank's order as PyTorch's `pipeline_order` holds it: the tasks, and an empty slot for each
/// of its `None` entries (idle slots of its lock-step picture; they never delay anything).
using PaddedRow = std::vector<std::optional<Task>>;

struct ScheduleInfo {
  std::string_view name;
  std::vector<std::string_view> aliases;
  std::string_view constraint;   ///< preconditions in words, for `ppsim list`
  std::string_view description;  ///< one line
  std::string_view reference;
  /// Throws ConfigError naming the values when the generator does not support the shape.
  void (*check)(std::string_view name, const ScheduleSpec&);
  Schedule (*make)(const ScheduleSpec&);
  /// For an automatic schedule (a search under a memory limit), the limit in M_B units its
  /// generator works under for `spec`: spec.mem_limit, or its own default when that is < 0
  /// (zb-1p and zb-2p: their fixed one). Null for a handcrafted schedule.
  double (*generation_limit)(const ScheduleSpec&) = nullptr;

  /// Whether the generator searches for its order (and so reports how far from optimal it is).
  [[nodiscard]] bool automatic() const { return generation_limit != nullptr; }
  /// The torch.distributed.pipelining class of the same schedule, for `ppsim list`; empty when
  /// PyTorch has none. Its compute actions equal ours token for token (its I = our B, its B =
  /// our BW, OVERLAP_F_B = our FB) wherever both accept the shape, unless pytorch_note says how
  /// they differ (tests/schedules/pytorch_test.cpp pins each against PyTorch's orders).
  std::string_view pytorch_class{};
  /// Where the orders or the constraints differ, or a pointer to the PyTorch-named sibling.
  std::string_view pytorch_note{};
  /// PyTorch's order with its idle slots, for the generators that reproduce them (export writes
  /// them as empty cells); null = no idle slots are known.
  std::vector<PaddedRow> (*pytorch_slots)(const ScheduleSpec&) = nullptr;
};

/// Every schedule ppsim generates, in the order `ppsim list` shows them.
[[nodiscard]] std::span<const ScheduleInfo> schedule_registry();

/// The entry for a name or alias, or null.
[[nodiscard]] const ScheduleInfo* find_schedule(std::string_view name);
/// Whether --mem-limit steers the schedule's search (zb-auto, zb-v; zb-1p and zb-2p fix their
/// own limit).
[[nodiscard]] bool takes_mem_limit(const ScheduleInfo& info);

/// Builds a schedule by name. Throws ConfigError for an unknown name (listing the valid ones)
/// or a shape the generator does not support (naming the values).
///
///   Schedule s = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
[[nodiscard]] Schedule make_schedule(std::string_view name, const ScheduleSpec& spec);

/// Whether the schedule runs sequence slices (--slices N > 1): seq1f1b and seq-zb-h1.
[[nodiscard]] bool takes_slices(const ScheduleInfo& info);

/// The chunk count (v, stages per device) the generator builds for `spec`: spec.chunks where
/// given, else the family's default (2 for the looped and V schedules, 1 for the rest). A
/// model's costs depend on it (which stage holds the embedding and the loss), so a request
/// knows it before it assembles them.
[[nodiscard]] int built_chunks(const ScheduleInfo& info, const ScheduleSpec& spec);

/// Comma-separated names, for error messages.
[[nodiscard]] std::string schedule_names();

/// Whether the schedule's generator accepts the shape: empty when it does, else the reason it
/// refuses, as make_schedule would say it (`zb-h2: needs microbatches >= 2*devices (got ...)`).
/// Checks the shape only: a memory limit can still be infeasible.
[[nodiscard]] std::string rejection(const ScheduleInfo& info, const ScheduleSpec& spec);
[[nodiscard]] inline bool accepts(const ScheduleInfo& info, const ScheduleSpec& spec) {
  return rejection(info, spec).empty();
}

} // namespace ppsim
