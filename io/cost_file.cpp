// Parsing of --costs and ppsim.costs/1 files.
#include "io/cost_file.hpp"

#include "io/detail/json_reader.hpp"
#include "io/text_file.hpp"
#include "io/text_parse.hpp"
#include "sim/errors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using nlohmann::json;

constexpr std::string_view kCostKeys = "F, B, W, BW, FB, comm, MB, MW";

} // namespace

void apply_costs(CostSpec& spec, std::string_view text) {
  for_each_key_value(text, fmt::format("--costs '{}'", text), [&](std::string_view key,
                                                                   std::string_view text_value) {
    const auto where = fmt::format("--costs {}", key);
    const double value = parse_non_negative(text_value, where);
    if (key == "comm") {
      spec.comm = ms_to_ticks(value, where);
      return;
    }
    for (auto& s : spec.stages) {
      if (key == "F") s.F = ms_to_ticks(value, where);
      else if (key == "B") s.B = ms_to_ticks(value, where);
      else if (key == "W") s.W = ms_to_ticks(value, where);
      else if (key == "BW") s.BW = ms_to_ticks(value, where);
      else if (key == "FB") s.FB = ms_to_ticks(value, where);
      else if (key == "MB") s.MB = value;
      else if (key == "MW") s.MW = value;
      else
        throw ConfigError(
            fmt::format("--costs: unknown key '{}' (valid keys: {})", key, kCostKeys));
    }
  });
  if (spec.source == "default") spec.source = fmt::format("--costs {}", text);
  else spec.source += fmt::format(" + --costs {}", text);
}

CostSpec parse_costs(std::string_view text) {
  CostSpec spec;
  apply_costs(spec, text);
  return spec;
}

using detail::JsonReader;

CostSpec parse_cost_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  r.object(doc, "");
  CostSpec spec;
  spec.stages.clear();
  spec.source = std::string(where);
  bool have_schema = false, have_stages = false;
  for (const auto& [key, value] : doc.items()) {
    const std::string path = "/" + key;
    if (key == "schema") {
      if (!value.is_string() || value.get<std::string>() != "ppsim.costs/1")
        r.fail(path, fmt::format("expected \"ppsim.costs/1\", got {}", JsonReader::shown(value)));
      have_schema = true;
    } else if (key == "comm") {
      spec.comm = r.ms(value, path);
    } else if (key == "memory_unit_bytes") {
      spec.memory_unit_bytes = r.number(value, path);
    } else if (key == "description" || key == "machine") {
      if (!value.is_string()) r.fail(path, "expected a string");
    } else if (key == "kernels" || key == "gradient_check" || key == "provenance" ||
               key == "model" || key == "comm_estimate" || key == "memory") {
      r.object(value, path);  // informational sections written by `ppsim calibrate`
    } else if (key == "stages") {
      have_stages = true;
      if (!value.is_array() || value.empty())
        r.fail(path, "expected a non-empty array of per-stage costs");
      for (std::size_t i = 0; i < value.size(); ++i) {
        const auto& st = value[i];
        const std::string sp = fmt::format("/stages/{}", i);
        r.object(st, sp);
        StageCosts c;
        bool f = false, b = false, w = false;
        for (const auto& [k, v] : st.items()) {
          const std::string kp = sp + "/" + k;
          if (k == "F") c.F = r.ms(v, kp), f = true;
          else if (k == "B") c.B = r.ms(v, kp), b = true;
          else if (k == "W") c.W = r.ms(v, kp), w = true;
          else if (k == "BW") c.BW = r.ms(v, kp);
          else if (k == "FB") c.FB = r.ms(v, kp);
          else if (k == "MB") c.MB = r.number(v, kp);
          else if (k == "MW") c.MW = r.number(v, kp);
          else if (k == "MB_bytes" || k == "MW_bytes" || k == "blocks") (void)r.number(v, kp);
          else
            r.fail(kp, "unknown key (valid: F, B, W, BW, FB, MB, MW, MB_bytes, MW_bytes, blocks)");
        }
        if (!f || !b || !w) r.fail(sp, "each stage needs F, B and W (milliseconds)");
        spec.stages.push_back(c);
      }
    } else {
      r.fail(path, "unknown key (valid: schema, stages, comm, memory_unit_bytes, description, "
                   "machine, model, kernels, gradient_check, provenance, comm_estimate, memory)");
    }
  }
  if (!have_schema) r.fail("/schema", "missing (expected \"ppsim.costs/1\")");
  if (!have_stages) r.fail("/stages", "missing");
  return spec;
}

CostSpec load_cost_file(const std::string& path) {
  return parse_cost_json(read_text_file(path, "cost file"), path);
}

} // namespace ppsim
