// The table of schedules.
#include "schedules/registry.hpp"

#include "sim/errors.hpp"

#include <array>
#include <fmt/format.h>

namespace ppsim {

std::span<const ScheduleInfo> schedule_registry() {
  static const std::array<ScheduleInfo, 4> table{{
      {"gpipe", {}, "m >= 1", "all forwards, then all fused backwards (BW)",
       "Huang et al., GPipe, NeurIPS 2019", &make_gpipe},
      {"1f1b", {"1F1B"}, "m >= 1 (warm-up clamped to m)",
       "warm-up p-1-d F, then one F one BW, then cool-down (PipeDream-flush)",
       "Narayanan et al., PipeDream-2BW / Megatron-LM 2021", &make_1f1b},
      {"zb-h1", {"zbh1"}, "m >= 1",
       "1F1B with B and W split and W deferred to fill the cool-down; memory as 1F1B",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3", &make_zb_h1},
      {"zb-h2", {"zbh2"}, "m >= 2p",
       "2(p-1-d) extra warm-up F and deferred W: zero bubble at (2p-1) M_B",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3", &make_zb_h2},
  }};
  return table;
}

const ScheduleInfo* find_schedule(std::string_view name) {
  for (const auto& info : schedule_registry()) {
    if (info.name == name) return &info;
    for (auto alias : info.aliases)
      if (alias == name) return &info;
  }
  return nullptr;
}

std::string schedule_names() {
  std::string out;
  for (const auto& info : schedule_registry()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

void require_shape(std::string_view name, const ScheduleSpec& spec) {
  if (spec.devices < 1)
    throw ConfigError(fmt::format("{}: needs stages >= 1 (got stages={})", name, spec.devices));
  if (spec.microbatches < 1)
    throw ConfigError(
        fmt::format("{}: needs microbatches >= 1 (got microbatches={})", name, spec.microbatches));
  if (spec.devices > 4096 || spec.microbatches > 1'000'000 ||
      static_cast<long long>(spec.devices) * spec.microbatches > 50'000'000LL)
    throw ConfigError(fmt::format("{}: stages={} x microbatches={} is too large to simulate", name,
                                  spec.devices, spec.microbatches));
}

Schedule make_schedule(std::string_view name, const ScheduleSpec& spec) {
  const ScheduleInfo* info = find_schedule(name);
  if (info == nullptr)
    throw ConfigError(
        fmt::format("unknown schedule '{}' (valid: {})", name, schedule_names()));
  return info->make(spec);
}

} // namespace ppsim
