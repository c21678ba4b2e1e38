// Activation offload: which activations each device's copy stream moves to the host after
// their F (an O) and back before the backward that needs them (an R), and what a copy costs.
#pragma once

#include "ppsim/sim/time.hpp"

#include <cmath>
#include <vector>

namespace ppsim {

/// The copies the engine adds (SimOptions::offload). Per stage the fraction of each
/// micro-batch's activation (the stage's M_B) that is offloaded; a copy of `u` M_B takes
/// latency + u * ns_per_unit. The engine keeps one copy stream per device, first issued first
/// served: an O is issued at the end of its F, an R at the start of the task before its
/// backward (one task ahead), never starting before its O ended; the backward waits for it.
///
///   OffloadPlan plan{.fraction = std::vector<double>(S, 0.5), .ns_per_unit = 2e6};
///   options.offload = plan;   // ppsim/sim/simulator.hpp
struct OffloadPlan {
  std::vector<double> fraction;  ///< per stage, in [0, 1]; empty = no offload
  Ticks latency{0};              ///< per copy
  double ns_per_unit{0};         ///< nanoseconds to copy one M_B (either direction)

  /// True when some stage offloads something.
  [[nodiscard]] bool any() const {
    for (const double f : fraction)
      if (f > 0) return true;
    return false;
  }
  /// The duration of one copy of `units` M_B, to the nanosecond.
  [[nodiscard]] Ticks copy_time(double units) const {
    return add_ticks(latency, static_cast<Ticks>(std::llround(units * ns_per_unit)));
  }

  friend bool operator==(const OffloadPlan&, const OffloadPlan&) = default;
};

} // namespace ppsim
