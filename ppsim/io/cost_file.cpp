// Parsing of --costs and ppsim.costs/1 files.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/detail/cost_document.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using nlohmann::json;

// The keys of --costs: the table is also the "valid keys" message.
struct CostKey {
  std::string_view name;
  Ticks StageCosts::*ms{nullptr};   // a per-stage time
  double StageCosts::*mb{nullptr};  // a per-stage number: memory in M_B units, or bytes
  bool comm{false};                 // the per-edge communication time
  bool copy{false};                 // the time to copy one M_B to or from the host
};
constexpr CostKey kCostKeys[] = {
    {"F", &StageCosts::F},          {"B", &StageCosts::B},   {"W", &StageCosts::W},
    {"BW", &StageCosts::BW},        {"FB", &StageCosts::FB}, {"R", &StageCosts::R},
    {"comm", nullptr, nullptr, true},
    {"copy", nullptr, nullptr, false, true},
    {"MB", nullptr, &StageCosts::MB}, {"MW", nullptr, &StageCosts::MW},
    {"act_bytes", nullptr, &StageCosts::act_bytes},
    {"grad_bytes", nullptr, &StageCosts::grad_bytes},
};

std::string cost_key_names() {
  std::string out;
  for (const CostKey& k : kCostKeys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

} // namespace

void apply_costs(CostSpec& spec, std::string_view text) {
  bool recompute_given = false;
  for_each_key_value(text, fmt::format("--costs '{}'", excerpt(text)), [&](std::string_view key,
                                                                   std::string_view text_value) {
    const CostKey* k = nullptr;
    for (const CostKey& c : kCostKeys)
      if (c.name == key) k = &c;
    if (k == nullptr)
      throw ConfigError(fmt::format("--costs: unknown key '{}' (valid keys: {})", excerpt(key),
                                    cost_key_names()));
    const auto where = fmt::format("--costs {}", excerpt(key));
    const double value = parse_non_negative(text_value, where);
    const bool message_bytes = k->mb == &StageCosts::act_bytes || k->mb == &StageCosts::grad_bytes;
    if (message_bytes && value > limits::kMaxMessageBytes)
      throw ConfigError(fmt::format("{}: {} bytes is too large (limit {:.0e})", where,
                                    excerpt(text_value), limits::kMaxMessageBytes));
    // A memory beyond this would make a device's running sum infinite (and its peak null).
    if (k->mb != nullptr && !message_bytes && value > limits::kMaxMemoryUnits)
      throw ConfigError(fmt::format("{}: {} is too large (at most {:g} M_B)", where,
                                    excerpt(text_value), limits::kMaxMemoryUnits));
    if (k->comm) spec.comm = ms_to_ticks(value, where);
    recompute_given = recompute_given || k->ms == &StageCosts::R;
    if (k->copy) spec.copy = ms_to_ticks(value, where);
    for (auto& s : spec.stages) {
      if (k->ms != nullptr) s.*(k->ms) = ms_to_ticks(value, where);
      if (k->mb != nullptr) s.*(k->mb) = value;
    }
  });
  // NOTE: only when R is given: a model's R with a smaller B from --costs is cut to B.
  for (const StageCosts& s : spec.stages)
    if (recompute_given && s.R > s.B)
      throw ConfigError(fmt::format("--costs '{}': R={} ms, the recomputed forward, is part of B "
                                    "and at most B={} ms",
                                    excerpt(text), ticks_to_ms(s.R), ticks_to_ms(s.B)));
  if (spec.source == "default") spec.source = fmt::format("--costs {}", text);
  else spec.source += fmt::format(" + --costs {}", text);
}

CostSpec parse_costs(std::string_view text) {
  CostSpec spec;
  apply_costs(spec, text);
  return spec;
}

using detail::JsonReader;

namespace {

// `"link": {"latency": 0.01, "bandwidth": 12}`: ms and GB/s, as --link takes them; either key
// sizes the messages.
LinkModel read_link(const JsonReader& r, const json& v, const std::string& at) {
  LinkModel link;
  link.sized = true;
  const detail::Field fields[] = {
      {"latency", false, "", [&](const json& x, const std::string& p) { link.latency = r.ms(x, p); }},
      {"bandwidth", false, "",
       [&](const json& x, const std::string& p) {
         link.bandwidth = r.number(x, p);
         if (!(link.bandwidth > 0)) r.fail(p, "expected a bandwidth > 0 (GB/s)");
       }},
  };
  const detail::FieldsSeen seen = detail::read_fields(r, v, at, fields);
  if (!seen.has("latency") && !seen.has("bandwidth"))
    r.fail(at, "a link needs latency (ms), bandwidth (GB/s) or both");
  return link;
}

} // namespace

CostSpec parse_cost_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  CostSpec spec;
  spec.stages.clear();
  spec.source = std::string(where);
  const auto string = [&r](const json& v, const std::string& at) { (void)r.string(v, at); };
  // informational sections written by `ppsim calibrate`
  const auto section = [&r](const json& v, const std::string& at) { r.object(v, at); };
  const auto read_stage = [&](const json& st, const std::string& sp) {
    StageCosts c;
    bool f = false, b = false, w = false;
    const auto ms = [&](Ticks& field, bool* given = nullptr) {
      return [&r, &field, given](const json& v, const std::string& at) {
        field = r.ms(v, at);
        if (given != nullptr) *given = true;
      };
    };
    const auto number = [&r](double& field, double max) {
      return [&r, &field, max](const json& v, const std::string& at) {
        field = r.number(v, at, max);
      };
    };
    const auto ignored = [&r](const json& v, const std::string& at) { (void)r.number(v, at); };
    const auto bytes = [&r](double& field) {
      return [&r, &field](const json& v, const std::string& at) {
        field = r.number(v, at);
        if (!(field >= 0) || field > limits::kMaxMessageBytes)
          r.fail(at, fmt::format("expected bytes in 0..{:.0e}", limits::kMaxMessageBytes));
      };
    };
    // An uneven stage: its times this much longer (applied by cost_model_for).
    const auto factor = [&r](double& field) {
      return [&r, &field](const json& v, const std::string& at) {
        field = r.number(v, at);
        if (!(field > 0) || field > limits::kMaxSlowFactor)
          r.fail(at, fmt::format("expected a factor in (0, {:g}]", limits::kMaxSlowFactor));
      };
    };
    const detail::Field fields[] = {
        {"F", false, "", ms(c.F, &f)},      {"B", false, "", ms(c.B, &b)},
        {"W", false, "", ms(c.W, &w)},      {"BW", false, "", ms(c.BW)},
        {"FB", false, "", ms(c.FB)},        {"R", false, "", ms(c.R)},
        {"MB", false, "", number(c.MB, limits::kMaxMemoryUnits)},
        {"MW", false, "", number(c.MW, limits::kMaxMemoryUnits)},    {"MB_bytes", false, "", ignored},
        {"MW_bytes", false, "", ignored},   {"blocks", false, "", ignored},
        {"act_bytes", false, "", bytes(c.act_bytes)},
        {"grad_bytes", false, "", bytes(c.grad_bytes)},
        {"param_bytes", false, "", ignored}, {"params", false, "", number(c.params, limits::kMaxBytes)},
        {"state_bytes", false, "", number(c.state_bytes, limits::kMaxBytes)},
        {"factor", false, "", factor(c.factor)},
    };
    detail::read_fields(r, st, sp, fields);
    if (!f || !b || !w) r.fail(sp, "each stage needs F, B and W (milliseconds)");
    if (c.R > c.B) r.fail(sp + "/R", "the recomputed forward is part of B: at most B");
    spec.stages.push_back(c);
  };
  const detail::Field fields[] = {
      detail::schema_field(r, "ppsim.costs/1"),
      {"stages", true, "missing",
       [&](const json& v, const std::string& at) {
         if (!v.is_array() || v.empty())
           r.fail(at, "expected a non-empty array of per-stage costs");
         for (std::size_t i = 0; i < v.size(); ++i) read_stage(v[i], fmt::format("{}/{}", at, i));
       }},
      {"comm", false, "", [&](const json& v, const std::string& at) { spec.comm = r.ms(v, at); }},
      {"link", false, "", [&](const json& v, const std::string& at) { spec.link = read_link(r, v, at); }},
      {"copy", false, "", [&](const json& v, const std::string& at) { spec.copy = r.ms(v, at); }},
      {"memory_unit_bytes", false, "",
       [&](const json& v, const std::string& at) {
         spec.memory_unit_bytes = r.number(v, at, limits::kMaxBytes);
       }},
      {"description", false, "", string},
      {"machine", false, "", string},
      {"model", false, "", section},
      {"kernels", false, "", section},
      {"gradient_check", false, "", section},
      {"provenance", false, "", section},
      {"comm_estimate", false, "", section},
      {"memory", false, "", section},
      {"fit", false, "", section},
  };
  detail::read_fields(r, doc, "", fields);
  return spec;
}

nlohmann::ordered_json detail::cost_spec_document(const CostSpec& spec,
                                                  const std::string& description) {
  nlohmann::ordered_json doc;
  doc["schema"] = "ppsim.costs/1";
  if (!description.empty()) doc["description"] = description;
  if (spec.memory_unit_bytes > 0) doc["memory_unit_bytes"] = spec.memory_unit_bytes;
  doc["comm"] = ticks_to_ms(spec.comm);
  if (spec.link.sized) {
    nlohmann::ordered_json link;
    link["latency"] = ticks_to_ms(spec.link.latency);
    if (spec.link.bandwidth > 0) link["bandwidth"] = spec.link.bandwidth;
    doc["link"] = std::move(link);
  }
  if (spec.copy >= 0) doc["copy"] = ticks_to_ms(spec.copy);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageCosts& c : spec.stages) {
    nlohmann::ordered_json st;
    st["F"] = ticks_to_ms(c.F);
    st["B"] = ticks_to_ms(c.B);
    st["W"] = ticks_to_ms(c.W);
    if (c.BW >= 0) st["BW"] = ticks_to_ms(c.BW);
    if (c.FB >= 0) st["FB"] = ticks_to_ms(c.FB);
    if (c.R > 0) st["R"] = ticks_to_ms(c.R);
    st["MB"] = c.MB;
    st["MW"] = c.MW;
    if (spec.memory_unit_bytes > 0) {
      st["MB_bytes"] = c.MB * spec.memory_unit_bytes;
      st["MW_bytes"] = c.MW * spec.memory_unit_bytes;
    }
    if (c.act_bytes > 0) st["act_bytes"] = c.act_bytes;
    if (c.grad_bytes > 0) st["grad_bytes"] = c.grad_bytes;
    if (c.params > 0) st["params"] = c.params;
    if (c.state_bytes > 0) st["state_bytes"] = c.state_bytes;
    if (c.factor != 1.0) st["factor"] = c.factor;
    stages.push_back(std::move(st));
  }
  doc["stages"] = std::move(stages);
  return doc;
}

std::string cost_spec_json(const CostSpec& spec, const std::string& description) {
  return detail::cost_spec_document(spec, description).dump(2) + "\n";
}

SlowDevice parse_slow(std::string_view text) {
  SlowDevice slow;
  bool device = false, factor = false;
  for_each_key_value(text, fmt::format("--slow '{}'", excerpt(text)), [&](std::string_view key,
                                                                  std::string_view value) {
    const auto where = fmt::format("--slow {}", excerpt(key));
    if (key == "device") {
      slow.device = static_cast<int>(parse_integer(value, where, 0, limits::kMaxDevices - 1));
      device = true;
    } else if (key == "factor") {
      slow.factor = parse_number(value, where);
      if (!(slow.factor > 0) || slow.factor > limits::kMaxSlowFactor)
        throw ConfigError(fmt::format("{}={}: must be in (0, {:g}]", where, excerpt(value),
                                      limits::kMaxSlowFactor));
      factor = true;
    } else {
      throw ConfigError(
          fmt::format("--slow: unknown key '{}' (valid keys: device, factor)", excerpt(key)));
    }
  });
  if (!device || !factor)
    throw ConfigError(fmt::format("--slow '{}': needs device=D,factor=X", excerpt(text)));
  return slow;
}

CostSpec load_cost_file(const std::string& path) {
  return parse_cost_json(read_text_file(path, "cost file"), path);
}

} // namespace ppsim
