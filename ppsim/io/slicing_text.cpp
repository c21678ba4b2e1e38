// --slicing as the user writes it (ppsim/io/slicing_text.hpp).
#include "ppsim/io/slicing_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <cmath>
#include <fmt/format.h>

namespace ppsim {

SlicingSpec parse_slicing(std::string_view text) {
  const std::string_view t = trim(text);
  const auto bad = [&](std::string_view why) {
    return ConfigError(fmt::format("--slicing {}: {} (use even, balanced or lengths such as "
                                   "3,1)",
                                   excerpt(text), why));
  };
  SlicingSpec spec;
  if (t == "even" || t.empty()) return spec;
  if (t == "balanced") {
    spec.mode = SlicingSpec::Mode::balanced;
    return spec;
  }
  spec.mode = SlicingSpec::Mode::lengths;
  double sum = 0;
  std::size_t from = 0;
  while (true) {
    if (spec.lengths.size() >= static_cast<std::size_t>(limits::kMaxSlices))
      throw bad(fmt::format("more than {} slices", limits::kMaxSlices));
    const std::size_t comma = t.find(',', from);
    const std::string_view cell = t.substr(from, comma == std::string_view::npos ? t.npos : comma - from);
    double x = 0;
    try {
      x = parse_number(trim(cell), "--slicing");
    } catch (const ConfigError&) {
      throw bad(fmt::format("{} is not a length", excerpt(trim(cell))));
    }
    if (!(x > 0) || !std::isfinite(x) || x > 1e12)
      throw bad(fmt::format("each length must be a positive number up to 1e12 (got {:g})", x));
    spec.lengths.push_back(x);
    sum += x;
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  if (spec.lengths.size() < 2) throw bad("give two lengths or more, or even or balanced");
  for (double& x : spec.lengths) x /= sum;
  return spec;
}

} // namespace ppsim
