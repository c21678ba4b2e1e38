// The --mem-limit parser.
#include "ppsim/io/mem_limit_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

MemLimit MemLimit::of_units(double mb) {
  return MemLimit{Unit::units, mb, fmt::format("{:.17g}", mb)};
}

MemLimit parse_mem_limit(std::string_view text) {
  if (text.empty()) return {};
  const auto bad = [&](std::string_view why) {
    return ConfigError(fmt::format("--mem-limit '{}': {} (use 2p, 1.5p, 12, or 3GiB with "
                                   "--model/--device or a cost file that knows bytes)",
                                   excerpt(text), why));
  };
  NumberWithUnit n;
  try {
    n = parse_number_with_unit(text, "--mem-limit");
  } catch (const ConfigError&) {
    throw bad("expected a number");
  }
  if (!std::isfinite(n.value) || n.value <= 0) throw bad("must be a positive number");
  MemLimit limit{MemLimit::Unit::units, n.value, std::string(text)};
  if (n.unit.empty()) {
    if (n.value > limits::kMaxMemoryUnits)
      throw bad(fmt::format("at most {:g} M_B", limits::kMaxMemoryUnits));
    return limit;
  }
  if (n.unit == "p") {
    if (n.value * limits::kMaxDevices > limits::kMaxMemoryUnits)
      throw bad(fmt::format("at most {:g}p", limits::kMaxMemoryUnits / limits::kMaxDevices));
    limit.unit = MemLimit::Unit::per_device;
    return limit;
  }
  if (const auto bytes = byte_unit(n.unit)) {
    limit.unit = MemLimit::Unit::bytes;
    limit.value = n.value * *bytes;
    if (limit.value > limits::kMaxBytes)
      throw bad(fmt::format("at most {:g} bytes", limits::kMaxBytes));
    return limit;
  }
  throw bad(fmt::format("unknown unit '{}'", excerpt(n.unit)));
}

} // namespace ppsim
