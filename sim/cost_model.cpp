// Parsing of --costs and ppsim.costs/1 files, and their expansion over a schedule's stages.
#include "sim/cost_model.hpp"

#include "sim/errors.hpp"
#include "io/detail/json_reader.hpp"
#include "io/text_parse.hpp"
#include "io/text_file.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ppsim {

namespace {

using nlohmann::json;

constexpr std::string_view kCostKeys = "F, B, W, BW, FB, comm, MB, MW";

std::size_t as_index(int i) { return static_cast<std::size_t>(i); }

Ticks scale(Ticks t, int divisor) {
  if (t < 0 || divisor <= 1) return t;
  return (t + divisor / 2) / divisor;
}

} // namespace

Ticks ms_to_ticks(double ms, std::string_view where) {
  if (!std::isfinite(ms) || ms < 0)
    throw ConfigError(fmt::format("{}: expected a finite time >= 0 ms, got {}", where, ms));
  if (ms > 1e12) throw ConfigError(fmt::format("{}: {} ms is too large", where, ms));
  return static_cast<Ticks>(std::llround(ms * 1e6));
}

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

CostModel cost_model_for(const CostSpec& spec, const Schedule& schedule) {
  const Topology topo(schedule);
  const int S = schedule.stages();
  const int p = schedule.devices;
  const int v = schedule.chunks();
  const int n = static_cast<int>(spec.stages.size());
  if (n != 1 && n != p && n != S)
    throw ConfigError(fmt::format(
        "{}: {} stage entries, but the schedule has {} devices and {} stages (give 1, {} or {})",
        spec.source, n, p, S, p, S));
  CostModel model;
  model.comm = spec.comm;
  model.memory_unit_bytes = spec.memory_unit_bytes;
  model.source = spec.source;
  model.stage.resize(as_index(S));
  for (int s = 0; s < S; ++s) {
    StageCosts c;
    int divisor = 1;
    if (n == S) {  // per virtual stage (when S == p that is also per device-stage, v = 1)
      c = spec.stages[as_index(s)];
    } else {
      // NOTE: a per-device-stage profile describes the model cut into p pieces; a virtual stage
      // is 1/v of the piece it lies in, so every schedule runs the same model.
      const int piece = n == 1 ? 0 : std::min(n - 1, topo.model_position(s) / v);
      c = spec.stages[as_index(piece)];
      divisor = v;
    }
    const bool bw_given = c.BW >= 0;
    c.F = scale(c.F, divisor);
    c.B = scale(c.B, divisor);
    c.W = scale(c.W, divisor);
    c.BW = bw_given ? scale(c.BW, divisor) : c.B + c.W;
    c.FB = scale(c.FB, divisor);
    c.MB /= divisor;
    c.MW /= divisor;
    model.stage[as_index(s)] = c;
  }
  return model;
}

Ticks CostModel::duration(const Task& task) const {
  const auto& s = stage[as_index(task.stage)];
  switch (task.kind) {
  case Kind::F: return s.F;
  case Kind::B: return s.B;
  case Kind::W: return s.W;
  case Kind::BW: return s.BW;
  case Kind::FB: {
    if (s.FB >= 0) return s.FB;
    const auto& b = stage[as_index(task.stage2)];
    return s.F + (task.kind2 == Kind::BW ? b.BW : b.B);
  }
  }
  return 0;
}

double CostModel::memory_delta(Kind kind, int s) const {
  const auto& c = stage[as_index(s)];
  switch (kind) {
  case Kind::F: return c.MB;
  case Kind::B: return -(c.MB - c.MW);
  case Kind::W: return -c.MW;
  case Kind::BW: return -c.MB;
  case Kind::FB: return 0.0;  // handled part by part
  }
  return 0.0;
}

} // namespace ppsim
