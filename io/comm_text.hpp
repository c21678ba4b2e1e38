// The `--link latency=MS,bandwidth=GB/s,contention=none|duplex` option as text.
#pragma once

#include "sim/comm.hpp"

#include <string_view>

namespace ppsim {

/// Parses `latency=0.01,bandwidth=12,contention=duplex` (every key optional; latency in ms,
/// bandwidth in GB/s, > 0). Latency or bandwidth make the link sized (a message takes latency +
/// bytes / bandwidth). Throws ConfigError naming the key and the valid ones.
[[nodiscard]] LinkModel parse_link(std::string_view text);

} // namespace ppsim
