// The schedule generators by name, with their constraints.
#pragma once

#include "sim/cost_model.hpp"
#include "sim/schedule.hpp"

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
  double mem_limit{-1};  ///< activation memory limit per device in M_B units; < 0 = default
  const CostSpec* costs{nullptr};  ///< for cost-aware generators; null = unit costs
};

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
};

/// Every schedule ppsim generates, in the order `ppsim list` shows them.
[[nodiscard]] std::span<const ScheduleInfo> schedule_registry();

/// The entry for a name or alias, or null.
[[nodiscard]] const ScheduleInfo* find_schedule(std::string_view name);

/// Builds a schedule by name. Throws ConfigError for an unknown name (listing the valid ones)
/// or a shape the generator does not support (naming the values).
///
///   Schedule s = make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
[[nodiscard]] Schedule make_schedule(std::string_view name, const ScheduleSpec& spec);

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
