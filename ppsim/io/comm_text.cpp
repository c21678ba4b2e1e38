// Parsing of --link, --comm-mode and --sync.
#include "ppsim/io/comm_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <fmt/format.h>

namespace ppsim {

CommMode parse_comm_mode(std::string_view text) {
  if (text == "async") return CommMode::Async;
  if (text == "blocking") return CommMode::Blocking;
  throw ConfigError(
      fmt::format("--comm-mode '{}': unknown mode (valid: async, blocking)", excerpt(text)));
}

Contention parse_contention(std::string_view text) {
  if (text == "none") return Contention::None;
  if (text == "duplex") return Contention::Duplex;
  throw ConfigError(
      fmt::format("--link contention='{}': unknown model (valid: none, duplex)", excerpt(text)));
}

SyncMode parse_sync(std::string_view text) {
  if (text == "allreduce") return SyncMode::AllReduce;
  if (text == "post-validation") return SyncMode::PostValidation;
  throw ConfigError(fmt::format("--sync '{}': unknown mode (valid: allreduce, post-validation)",
                                excerpt(text)));
}

LinkModel parse_link(std::string_view text) {
  LinkModel link;
  for_each_key_value(
      text, fmt::format("--link '{}'", excerpt(text)), [&](std::string_view key, std::string_view value) {
        const auto where = fmt::format("--link {}", excerpt(key));
        if (key == "latency") {
          link.latency = ms_to_ticks(parse_non_negative(value, where), where);
          link.sized = true;
        } else if (key == "bandwidth") {
          const double gbps = parse_number(value, where);
          if (!(gbps > 0))
            throw ConfigError(fmt::format("{}={}: must be > 0 (GB/s)", where, excerpt(value)));
          link.bandwidth = gbps;
          link.sized = true;
        } else if (key == "contention") {
          link.contention = parse_contention(value);
        } else {
          throw ConfigError(fmt::format(
              "--link: unknown key '{}' (valid keys: latency, bandwidth, contention)", excerpt(key)));
        }
      });
  return link;
}

} // namespace ppsim
