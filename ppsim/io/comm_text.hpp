// How messages travel and iterations synchronise, as the user types them: `--link
// latency=MS,bandwidth=GB/s,contention=none|duplex`, `--comm-mode async|blocking`,
// `--sync allreduce|post-validation`.
#pragma once

#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/iterations.hpp"

#include <string_view>

namespace ppsim {

/// Parses `latency=0.01,bandwidth=12,contention=duplex` (every key optional; latency in ms,
/// bandwidth in GB/s, > 0). Latency or bandwidth make the link sized (a message takes latency +
/// bytes / bandwidth). Throws ConfigError naming the key and the valid ones.
[[nodiscard]] LinkModel parse_link(std::string_view text);

/// comm_mode_name()'s text back; ConfigError naming the value (an excerpt) and the valid ones.
[[nodiscard]] CommMode parse_comm_mode(std::string_view text);
/// contention_name()'s text back (`--link contention=`); ConfigError as parse_comm_mode.
[[nodiscard]] Contention parse_contention(std::string_view text);
/// sync_name()'s text back; ConfigError as parse_comm_mode.
[[nodiscard]] SyncMode parse_sync(std::string_view text);

} // namespace ppsim
