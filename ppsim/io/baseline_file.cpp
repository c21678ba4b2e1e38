// Reading, writing and comparing `ppsim.baseline/1` files.
#include "ppsim/io/baseline_file.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace ppsim {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using detail::JsonReader;

constexpr std::string_view schema = "ppsim.baseline/1";

} // namespace

std::string default_case_name(const BaselineCase& c) {
  std::string name = c.schedule;
  if (c.devices > 0) name += fmt::format(" p={}", c.devices);
  if (c.microbatches > 0) name += fmt::format(" m={}", c.microbatches);
  if (c.chunks > 0) name += fmt::format(" v={}", c.chunks);
  if (c.slices > 1) name += fmt::format(" slices={}", c.slices);
  if (!c.mem_limit.empty()) name += " mem=" + c.mem_limit;
  if (!c.costs_file.empty()) name += " costs_file=" + c.costs_file;
  if (!c.costs.empty()) name += " costs=" + c.costs;
  return name;
}

namespace {

BaselineCase parse_case(const JsonReader& r, const json& j, const std::string& at,
                        bool require_expected) {
  BaselineCase c;
  const auto text = [&r](std::string& field, std::string_view empty_message = {}) {
    return [&r, &field, empty_message](const json& v, const std::string& path) {
      field = r.string(v, path);
      if (field.empty() && !empty_message.empty()) r.fail(path, std::string(empty_message));
    };
  };
  const auto integer = [&r](int& field, int lo) {
    return [&r, &field, lo](const json& v, const std::string& path) { field = r.integer(v, path, lo); };
  };
  const auto read_expected = [&](const json& v, const std::string& path) {
    r.object(v, path);
    const auto& names = baseline_metric_names();
    for (const auto& [metric, value] : v.items()) {
      const std::string mp = path + "/" + detail::pointer_token(metric);
      if (std::find(names.begin(), names.end(), metric) == names.end())
        r.fail(mp, fmt::format("unknown metric (valid: {})", fmt::join(names, ", ")));
      c.expected.emplace_back(metric, r.number(value, mp));
    }
    // Keep the file's values in the canonical order.
    std::vector<std::pair<std::string, double>> ordered;
    for (const std::string& name : names)
      for (const auto& e : c.expected)
        if (e.first == name) ordered.push_back(e);
    c.expected = std::move(ordered);
  };
  const detail::Field fields[] = {
      {"name", false, "",
       [&](const json& v, const std::string& path) {
         c.name = r.name(v, path);
         if (c.name.empty()) r.fail(path, "empty name");
       }},
      {"schedule", true, "missing", text(c.schedule)},
      {"p", false, "", integer(c.devices, 1)},
      {"m", false, "", integer(c.microbatches, 1)},
      {"v", false, "", integer(c.chunks, 0)},
      {"slices", false, "",
       [&](const json& v, const std::string& path) {
         c.slices = r.integer(v, path, 1);
         if (c.slices > limits::kMaxSlices)
           r.fail(path, fmt::format("{} slices: at most {}", c.slices, limits::kMaxSlices));
       }},
      {"costs", false, "", text(c.costs)},
      {"costs_file", false, "", text(c.costs_file, "empty file name")},
      {"mem_limit", false, "",
       [&](const json& v, const std::string& path) {
         if (v.is_number_integer()) c.mem_limit = v.dump();
         else if (v.is_number()) c.mem_limit = fmt::format("{}", r.number(v, path));
         else c.mem_limit = r.string(v, path);
         if (c.mem_limit.empty()) r.fail(path, "empty memory limit (leave the key out for none)");
       }},
      {"expected", false, "", read_expected},
  };
  const auto seen = detail::read_fields(r, j, at, fields);
  if (c.schedule.empty()) r.fail(at + "/schedule", "missing");
  const bool file = is_schedule_file(c.schedule);
  if (!file && c.devices == 0) r.fail(at + "/p", "missing (needed for a schedule by name)");
  if (!file && c.microbatches == 0) r.fail(at + "/m", "missing (needed for a schedule by name)");
  if (require_expected || !c.expected.empty()) {
    if (!seen.has("expected"))
      r.fail(at + "/expected", "missing (approve the case with `ppsim check --update`)");
    for (const std::string& name : baseline_metric_names()) {
      if (!baseline_required_metric(name)) continue;
      const bool present = std::any_of(c.expected.begin(), c.expected.end(),
                                       [&](const auto& e) { return e.first == name; });
      if (!present) r.fail(at + "/expected/" + name, "missing");
    }
  }
  if (!seen.has("name")) {
    c.name = default_case_name(c);
    // The writer writes every name, so a made-up one must read back as a name.
    if (c.name.size() > limits::kMaxNameChars)
      r.fail(at + "/name", fmt::format("missing, and the name made of the case's fields has {} "
                                       "characters (a name has at most {}): give the case a name",
                                       c.name.size(), limits::kMaxNameChars));
  }
  return c;
}

} // namespace

const std::vector<std::string>& baseline_metric_names() {
  static const std::vector<std::string> names = {"bubble_rate", "cost_ms", "ideal_ms",
                                                 "makespan_ms", "peak_memory"};
  return names;
}

bool baseline_required_metric(std::string_view name) {
  return name == "bubble_rate" || name == "cost_ms" || name == "peak_memory";
}

double baseline_metric(const Metrics& m, std::string_view name) {
  if (name == "bubble_rate") return m.bubble_rate;
  if (name == "cost_ms") return ticks_to_ms(m.cost);
  if (name == "ideal_ms") return ticks_to_ms(m.ideal);
  if (name == "makespan_ms") return ticks_to_ms(m.makespan);
  if (name == "peak_memory") return m.peak_memory;
  throw ConfigError(fmt::format("unknown baseline metric '{}'", excerpt(name)));
}

Baseline parse_baseline_json(std::string_view text, std::string_view where,
                             bool require_expected) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  Baseline b;
  const detail::Field fields[] = {
      detail::schema_field(r, schema),
      {"description", false, "",
       [&](const json& v, const std::string& at) { b.description = r.string(v, at); }},
      {"tolerance", false, "",
       [&](const json& v, const std::string& at) { b.tolerance = r.number(v, at); }},
      {"cases", true, "missing",
       [&](const json& v, const std::string& at) {
         r.array(v, at);
         std::set<std::string> names;
         for (std::size_t i = 0; i < v.size(); ++i) {
           const std::string ci = fmt::format("{}/{}", at, i);
           BaselineCase c = parse_case(r, v[i], ci, require_expected);
           if (!names.insert(c.name).second)
             r.fail(ci + "/name", fmt::format("duplicate case name '{}'", excerpt(c.name)));
           b.cases.push_back(std::move(c));
         }
       }},
  };
  detail::read_fields(r, doc, "", fields);
  if (b.cases.empty()) r.fail("/cases", "no cases: a baseline that checks nothing never fails");
  return b;
}

Baseline load_baseline_file(const std::string& path, bool require_expected) {
  return parse_baseline_json(read_text_file(path, "baseline file"), path, require_expected);
}

std::string baseline_json(const Baseline& b) {
  ojson doc;
  doc["schema"] = schema;
  if (!b.description.empty()) doc["description"] = b.description;
  if (b.tolerance >= 0) doc["tolerance"] = b.tolerance;
  ojson cases = ojson::array();
  for (const BaselineCase& c : b.cases) {
    ojson j;
    j["name"] = c.name;
    j["schedule"] = c.schedule;
    if (c.devices > 0) j["p"] = c.devices;
    if (c.microbatches > 0) j["m"] = c.microbatches;
    if (c.chunks > 0) j["v"] = c.chunks;
    if (c.slices > 1) j["slices"] = c.slices;
    if (!c.costs.empty()) j["costs"] = c.costs;
    if (!c.costs_file.empty()) j["costs_file"] = c.costs_file;
    if (!c.mem_limit.empty()) j["mem_limit"] = c.mem_limit;
    if (!c.expected.empty()) {
      ojson e = ojson::object();
      for (const auto& [metric, value] : c.expected) e[metric] = value;
      j["expected"] = std::move(e);
    }
    cases.push_back(std::move(j));
  }
  doc["cases"] = std::move(cases);
  return doc.dump(2) + "\n";
}

Change compare_metric(double expected, double got, double tolerance) {
  if (!std::isfinite(got)) return Change::worse;
  const double diff = got - expected;
  if (std::abs(diff) <= tolerance * std::max(std::abs(expected), 1.0)) return Change::same;
  return diff > 0 ? Change::worse : Change::better;
}

} // namespace ppsim
