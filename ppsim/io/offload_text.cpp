// Parsing of --offload.
#include "ppsim/io/offload_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <fmt/format.h>

namespace ppsim {

namespace {

double parse_fraction(std::string_view text, std::string_view where) {
  const double f = parse_number(text, where);
  if (!(f > 0 && f <= 1))
    throw ConfigError(fmt::format("{}: fraction {} is outside (0, 1]", where, excerpt(text)));
  return f;
}

// `A-B` or `A`, each 0..limit - 1, A <= B.
void parse_range(std::string_view text, std::string_view where, int limit, int& first,
                 int& last) {
  const auto dash = text.find('-');
  const std::string_view a = trim(text.substr(0, dash));
  const std::string_view b = dash == std::string_view::npos ? a : trim(text.substr(dash + 1));
  if (a.empty() || b.empty())
    throw ConfigError(fmt::format("{}: expected A-B or A, got '{}'", where, excerpt(text)));
  first = static_cast<int>(parse_integer(a, where, 0, limit - 1));
  last = static_cast<int>(parse_integer(b, where, 0, limit - 1));
  if (first > last)
    throw ConfigError(
        fmt::format("{}: range '{}' runs backwards ({} > {})", where, excerpt(text), first, last));
}

} // namespace

OffloadSpec parse_offload(std::string_view text) {
  OffloadSpec spec;
  const std::string_view t = trim(text);
  if (t.empty() || t == "none") return spec;
  spec.text = std::string(t);
  const auto where = fmt::format("--offload '{}'", excerpt(t));
  if (t == "auto") {
    spec.mode = OffloadSpec::Mode::automatic;
    return spec;
  }
  spec.mode = OffloadSpec::Mode::fraction;
  if (t.find('=') == std::string_view::npos) {
    spec.fraction = parse_fraction(t, where);
    return spec;
  }
  for_each_key_value(t, where, [&](std::string_view key, std::string_view value) {
    const auto at = fmt::format("{}: {}", where, excerpt(key));
    if (key == "fraction") spec.fraction = parse_fraction(value, at);
    else if (key == "stages")
      parse_range(value, at, static_cast<int>(limits::kMaxRouteStages), spec.first_stage,
                  spec.last_stage);
    else if (key == "chunks")
      parse_range(value, at, limits::kMaxDevices, spec.first_chunk, spec.last_chunk);
    else
      throw ConfigError(fmt::format("{}: unknown key '{}' (valid keys: stages, chunks, fraction; "
                                    "or none, auto, or a fraction such as 0.5)",
                                    where, excerpt(key)));
  });
  return spec;
}

} // namespace ppsim
