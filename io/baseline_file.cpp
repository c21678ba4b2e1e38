// Reading, writing and comparing `ppsim.baseline/1` files.
#include "io/baseline_file.hpp"

#include "sim/errors.hpp"
#include "io/detail/json_reader.hpp"
#include "io/text_file.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
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

std::string default_name(const BaselineCase& c) {
  std::string name = c.schedule;
  if (c.stages > 0) name += fmt::format(" p={}", c.stages);
  if (c.microbatches > 0) name += fmt::format(" m={}", c.microbatches);
  if (c.chunks > 0) name += fmt::format(" v={}", c.chunks);
  if (!c.mem_limit.empty()) name += " mem=" + c.mem_limit;
  if (!c.costs_file.empty()) name += " costs_file=" + c.costs_file;
  if (!c.costs.empty()) name += " costs=" + c.costs;
  return name;
}

BaselineCase parse_case(const JsonReader& r, const json& j, const std::string& at,
                        bool require_expected) {
  r.object(j, at);
  BaselineCase c;
  bool have_name = false;
  for (const auto& [key, value] : j.items()) {
    const std::string path = at + "/" + key;
    if (key == "name") {
      c.name = r.string(value, path);
      if (c.name.empty()) r.fail(path, "empty name");
      have_name = true;
    } else if (key == "schedule") {
      c.schedule = r.string(value, path);
    } else if (key == "p") {
      c.stages = r.integer(value, path, 1);
    } else if (key == "m") {
      c.microbatches = r.integer(value, path, 1);
    } else if (key == "v") {
      c.chunks = r.integer(value, path, 0);
    } else if (key == "costs") {
      c.costs = r.string(value, path);
    } else if (key == "costs_file") {
      c.costs_file = r.string(value, path);
      if (c.costs_file.empty()) r.fail(path, "empty file name");
    } else if (key == "mem_limit") {
      if (value.is_number_integer()) c.mem_limit = value.dump();
      else if (value.is_number()) c.mem_limit = fmt::format("{}", r.number(value, path));
      else c.mem_limit = r.string(value, path);
      if (c.mem_limit.empty()) r.fail(path, "empty memory limit (leave the key out for none)");
    } else if (key == "expected") {
      r.object(value, path);
      for (const auto& [metric, v] : value.items()) {
        if (std::find(baseline_metric_names().begin(), baseline_metric_names().end(), metric) ==
            baseline_metric_names().end())
          r.fail(path + "/" + metric,
                 fmt::format("unknown metric (known: bubble_rate, cost_ms, ideal_ms, makespan_ms, "
                             "peak_memory)"));
        c.expected.emplace_back(metric, r.number(v, path + "/" + metric));
      }
      // Keep the file's values in the canonical order.
      std::vector<std::pair<std::string, double>> ordered;
      for (const std::string& name : baseline_metric_names())
        for (const auto& e : c.expected)
          if (e.first == name) ordered.push_back(e);
      c.expected = std::move(ordered);
    } else {
      r.fail(path, "unknown key (known: name, schedule, p, m, v, costs, costs_file, mem_limit, "
                   "expected)");
    }
  }
  if (c.schedule.empty()) r.fail(at + "/schedule", "missing");
  const bool file = c.schedule.ends_with(".csv") || c.schedule.ends_with(".json");
  if (!file && c.stages == 0) r.fail(at + "/p", "missing (needed for a schedule by name)");
  if (!file && c.microbatches == 0) r.fail(at + "/m", "missing (needed for a schedule by name)");
  if (require_expected || !c.expected.empty()) {
    if (!j.contains("expected"))
      r.fail(at + "/expected", "missing (approve the case with `ppsim check --update`)");
    for (const std::string& name : baseline_metric_names()) {
      if (!baseline_required_metric(name)) continue;
      const bool present = std::any_of(c.expected.begin(), c.expected.end(),
                                       [&](const auto& e) { return e.first == name; });
      if (!present) r.fail(at + "/expected/" + name, "missing");
    }
  }
  if (!have_name) c.name = default_name(c);
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
  throw ConfigError(fmt::format("unknown baseline metric '{}'", name));
}

Baseline parse_baseline_json(std::string_view text, std::string_view where,
                             bool require_expected) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  r.object(doc, "");
  Baseline b;
  bool have_schema = false, have_cases = false;
  for (const auto& [key, value] : doc.items()) {
    const std::string path = "/" + key;
    if (key == "schema") {
      if (!value.is_string() || value.get<std::string>() != schema)
        r.fail(path, fmt::format("expected \"{}\", got {}", schema, JsonReader::shown(value)));
      have_schema = true;
    } else if (key == "description") {
      b.description = r.string(value, path);
    } else if (key == "tolerance") {
      b.tolerance = r.number(value, path);
    } else if (key == "cases") {
      r.array(value, path);
      have_cases = true;
      std::set<std::string> names;
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string at = fmt::format("/cases/{}", i);
        BaselineCase c = parse_case(r, value[i], at, require_expected);
        if (!names.insert(c.name).second)
          r.fail(at + "/name", fmt::format("duplicate case name '{}'", c.name));
        b.cases.push_back(std::move(c));
      }
    } else {
      r.fail(path, "unknown key (known: schema, description, tolerance, cases)");
    }
  }
  if (!have_schema) r.fail("/schema", fmt::format("missing (expected \"{}\")", schema));
  if (!have_cases) r.fail("/cases", "missing");
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
    if (c.stages > 0) j["p"] = c.stages;
    if (c.microbatches > 0) j["m"] = c.microbatches;
    if (c.chunks > 0) j["v"] = c.chunks;
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
