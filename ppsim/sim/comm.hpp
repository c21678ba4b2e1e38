// How messages between devices take time: the send mode, the link (latency and bandwidth
// against each message's bytes) and contention on a device pair.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/link.hpp"
#include "ppsim/sim/task.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// Async (default): a send does not occupy the sender's compute stream. Blocking: the seed's
/// `isend` + `req.wait()`: after a task whose result crosses to another device, the sender's
/// stream is busy until the message is delivered, before its next task starts.
enum class CommMode : std::uint8_t { Async, Blocking };

/// The names the options take (io/comm_text parses them back).
[[nodiscard]] std::string_view comm_mode_name(CommMode mode);
[[nodiscard]] std::string_view contention_name(Contention contention);

/// The communication options of a run; the default is exactly the simulator's original model.
struct CommOptions {
  CommMode mode{CommMode::Async};
  LinkModel link;

  [[nodiscard]] bool requested() const { return *this != CommOptions{}; }
  friend bool operator==(const CommOptions&, const CommOptions&) = default;
};

/// `comm` with the link of `costs` where `comm`'s own sizes no message: the latency and
/// bandwidth of a cost file's link (a fitted one), the contention and mode as `comm` has them.
/// A `--link` with latency or bandwidth wins over the file's.
[[nodiscard]] CommOptions with_cost_link(CommOptions comm, const CostSpec& costs);

/// Throws ConfigError for a negative latency or bandwidth, naming the value.
void check_comm_options(const CommOptions& options);

/// A message's time and size by what it carries: [stage] for the activation F sends forward,
/// and for the input gradient B (or BW) sends back.
struct MessageCosts {
  std::vector<Ticks> forward_time, backward_time;
  std::vector<double> forward_bytes, backward_bytes;

  [[nodiscard]] Ticks time(Kind part, int stage) const {
    return (part == Kind::F ? forward_time : backward_time)[static_cast<std::size_t>(stage)];
  }
  [[nodiscard]] double bytes(Kind part, int stage) const {
    return (part == Kind::F ? forward_bytes : backward_bytes)[static_cast<std::size_t>(stage)];
  }
};

/// The message costs of every stage of `costs` under `link` (latency + bytes / bandwidth,
/// rounded to the nanosecond, or `costs.comm`). Throws ConfigError when a time overflows.
[[nodiscard]] MessageCosts message_costs(const CostModel& costs, const LinkModel& link);

/// The link and mode as text for reports: `async`, `blocking; latency 0.01 ms, 12 GB/s,
/// duplex`.
[[nodiscard]] std::string describe(const CommOptions& options);

} // namespace ppsim
