// The communication model's names, checks and per-stage message costs.
#include "ppsim/sim/comm.hpp"

#include "ppsim/sim/errors.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

CommOptions with_cost_link(CommOptions comm, const CostSpec& costs) {
  if (comm.link.sized || !costs.link.sized) return comm;
  comm.link.sized = true;
  comm.link.latency = costs.link.latency;
  comm.link.bandwidth = costs.link.bandwidth;
  return comm;
}

std::string_view comm_mode_name(CommMode mode) {
  return mode == CommMode::Async ? "async" : "blocking";
}

std::string_view contention_name(Contention contention) {
  return contention == Contention::None ? "none" : "duplex";
}

void check_comm_options(const CommOptions& o) {
  if (o.link.latency < 0)
    throw ConfigError(
        fmt::format("--link latency={} ms: must be >= 0", ticks_to_ms(o.link.latency)));
  if (!std::isfinite(o.link.bandwidth) || o.link.bandwidth < 0)
    throw ConfigError(fmt::format("--link bandwidth={} GB/s: must be > 0", o.link.bandwidth));
}

MessageCosts message_costs(const CostModel& costs, const LinkModel& link) {
  const std::size_t S = costs.stage.size();
  MessageCosts m;
  m.forward_time.assign(S, costs.comm);
  m.backward_time.assign(S, costs.comm);
  m.forward_bytes.resize(S);
  m.backward_bytes.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    m.forward_bytes[s] = costs.stage[s].act_bytes;
    m.backward_bytes[s] = costs.stage[s].grad_bytes;
  }
  if (!link.sized)
    return m;
  // GB/s is bytes per nanosecond, so bytes / bandwidth is the transfer's time in ns.
  const auto time = [&](double bytes) {
    if (link.bandwidth <= 0 || bytes <= 0)
      return link.latency;
    const double ns = std::round(bytes / link.bandwidth);
    if (!(ns < 9.2e18))
      throw_time_overflow();
    return add_ticks(link.latency, static_cast<Ticks>(ns));
  };
  for (std::size_t s = 0; s < S; ++s) {
    m.forward_time[s] = time(m.forward_bytes[s]);
    m.backward_time[s] = time(m.backward_bytes[s]);
  }
  return m;
}

std::string describe(const CommOptions& o) {
  std::string text(comm_mode_name(o.mode));
  if (o.link.sized) {
    text += fmt::format("; latency {} ms", ticks_to_ms_text(o.link.latency));
    text += o.link.bandwidth > 0 ? fmt::format(", {:.6g} GB/s", o.link.bandwidth)
                                 : std::string(", unlimited bandwidth");
  }
  if (o.link.contention != Contention::None)
    text += fmt::format("; contention {}", contention_name(o.link.contention));
  return text;
}

} // namespace ppsim
