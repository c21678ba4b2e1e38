// The --recompute parser.
#include "ppsim/io/recompute_text.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ppsim {

namespace {

constexpr std::size_t kMaxEntries = static_cast<std::size_t>(limits::kMaxDevices) * 64;

} // namespace

std::string recompute_text(const StageRecompute& s) {
  if (s.mode == Recompute::full && s.layers >= 0)
    return fmt::format("full:{}{}", s.layers, s.rest == Recompute::selective ? "+selective" : "");
  return std::string(recompute_name(s.mode));
}

std::string recompute_text(const std::vector<StageRecompute>& stages) {
  if (stages.empty()) return "none";
  if (std::all_of(stages.begin(), stages.end(), [&](const StageRecompute& s) { return s == stages.front(); }))
    return recompute_text(stages.front());
  std::string out;
  for (const StageRecompute& s : stages) {
    if (!out.empty()) out += ',';
    out += recompute_text(s);
  }
  return out;
}

RecomputeSpec parse_recompute(std::string_view text, std::string_view where) {
  RecomputeSpec spec;
  if (trim(text).empty()) return spec;
  spec.text = std::string(text);
  const auto bad = [&](std::string_view entry, std::string_view why) {
    return ConfigError(fmt::format("{} '{}': {} (use none, selective, full, full:N for the first "
                                   "N layers of each stage, auto, or one of them per stage)",
                                   where, excerpt(entry), why));
  };
  if (trim(text) == "auto") {
    spec.automatic = true;
    return spec;
  }
  for_each_field(text, ',', [&](std::string_view entry) {
    if (spec.stages.size() >= kMaxEntries)
      throw bad(text, fmt::format("more than {} entries", kMaxEntries));
    if (entry.empty()) throw bad(text, "an empty entry");
    StageRecompute s;
    std::string_view mode = entry;
    std::string_view count;
    const auto colon = entry.find(':');
    if (colon != std::string_view::npos) {
      mode = trim(entry.substr(0, colon));
      count = trim(entry.substr(colon + 1));
    }
    if (mode == "none") s.mode = Recompute::none;
    else if (mode == "selective") s.mode = Recompute::selective;
    else if (mode == "full") s.mode = Recompute::full;
    else if (mode == "auto") throw bad(entry, "auto is for the whole model, not one stage");
    else throw bad(entry, "unknown choice");
    if (colon != std::string_view::npos) {
      if (s.mode != Recompute::full) throw bad(entry, "only full takes a layer count");
      if (const auto plus = count.find('+'); plus != std::string_view::npos) {
        const std::string_view rest = trim(count.substr(plus + 1));
        if (rest == "selective") s.rest = Recompute::selective;
        else if (rest != "none") throw bad(entry, "the other layers are none or selective");
        count = trim(count.substr(0, plus));
      }
      s.layers = static_cast<int>(parse_integer(count, fmt::format("{} '{}'", where, excerpt(entry)), 0, limits::kMaxLayers));
    }
    spec.stages.push_back(s);
    return true;
  });
  return spec;
}

} // namespace ppsim
