// The link between devices: how long a message of so many bytes takes, and whether messages
// on one device pair wait for one another. Its own header: the cost model and the run's
// options both name it.
#pragma once

#include "ppsim/sim/time.hpp"

#include <cstdint>

namespace ppsim {

/// None (default): messages never wait for one another. Duplex: each directed device pair
/// carries one message at a time, first sent first served; the two directions are independent.
enum class Contention : std::uint8_t { None, Duplex };

/// The link between devices (`--link latency=MS,bandwidth=GB/s,contention=none|duplex`).
/// With latency or bandwidth given, a message takes latency + bytes / bandwidth (the bytes of
/// the activation or gradient it carries, StageCosts::act_bytes / grad_bytes); otherwise it
/// takes the cost model's plain per-edge `comm`.
struct LinkModel {
  bool sized{false}; ///< latency + bytes / bandwidth instead of comm
  Ticks latency{0};
  double bandwidth{0}; ///< GB/s (= bytes per ns); 0 = unlimited
  Contention contention{Contention::None};

  friend bool operator==(const LinkModel&, const LinkModel&) = default;
};

} // namespace ppsim
