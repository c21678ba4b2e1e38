// Device presets and ppsim.device/1 files.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/sim/errors.hpp"

#include <array>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using nlohmann::json;
using detail::JsonReader;

constexpr double kMaxTflops = 1e7;

// NOTE: the constants of the presets' cost model (ppsim/run/kernel_time.hpp). The first two are fitted
// on four of the ten runs of Narayanan et al. 2021, Table 1 (data/published/megatron-2021.json,
// bench/fit_published.py; `ppsim validate-model` shows them and the six held out): the fraction
// of the dense peak a large GEMM reaches and the fraction of HBM bandwidth an elementwise kernel
// reaches. The third, one kernel's fixed cost (launch and tail), is assumed.
constexpr double kGemmEfficiency = 0.68;
constexpr double kHbmEfficiency = 0.7;
constexpr double kKernelOverheadUs = 4;
constexpr double kMaxGib = 1e7;

// The host side of a preset: a copy stream's bandwidth per direction, its latency, host memory.
struct Host {
  double gbytes_per_s;
  double latency_ms;
  double memory_gib;
};

// What is not a large GEMM: HBM bandwidth and the tensor-parallel group's bus bandwidth.
struct Memory {
  double hbm_gbytes_per_s;
  double tp_gbytes_per_s;
};

// NOTE: HGX A100/H100/H200 nodes have 8 GPUs on one NVLink switch; GH200 nodes (Alps,
// JUPITER) have 4 superchips.
DeviceSpec preset(std::string name, double tflops, double gib, double gbytes_per_s, Host host,
                  Memory memory, int gpus_per_node = 8) {
  DeviceSpec d;
  d.gpus_per_node = gpus_per_node;
  d.name = std::move(name);
  d.peak_tflops = tflops;
  d.efficiency_F = 0.6;
  d.efficiency_B = 0.55;
  d.efficiency_W = 0.6;
  d.memory_gib = gib;
  d.link_latency_ms = 0.005;
  d.link_gbytes_per_s = gbytes_per_s;
  d.host_link_gbytes_per_s = host.gbytes_per_s;
  d.host_link_latency_ms = host.latency_ms;
  d.host_memory_gib = host.memory_gib;
  d.hbm_gbytes_per_s = memory.hbm_gbytes_per_s;
  d.tp_link_gbytes_per_s = memory.tp_gbytes_per_s;
  d.hbm_efficiency = kHbmEfficiency;
  d.kernel_overhead_us = kKernelOverheadUs;
  d.efficiency_F = d.efficiency_B = d.efficiency_W = kGemmEfficiency;
  d.source = "preset " + d.name;
  return d;
}

} // namespace

std::span<const DeviceSpec> device_presets() {
  // NOTE: peaks are NVIDIA's dense BF16 figures (A100 312, H100 SXM 989 TFLOP/s, H200 the same
  // compute as H100 with 141 GB of HBM3e); the link is one InfiniBand NIC per GPU (HDR
  // 200 Gb/s for A100 systems, NDR 400 Gb/s for H100/H200). The efficiencies are assumptions
  // (measure yours, or give a device file). The HBM bandwidths are the data sheets' (A100 SXM
  // 80 GB 2,039 GB/s, H100 SXM 3,350, H200 4,800, GH200 with 96 GB HBM3 4,000); the
  // tensor-parallel bus bandwidth is what nccl-tests' all_reduce_perf typically reports as busbw
  // for large messages inside one NVSwitch node (an assumption: about 230 GB/s on DGX A100,
  // 450 GB/s on DGX H100; measure yours).
  // The host link is the nominal bandwidth per direction: PCIe Gen4 x16 (32 GB/s) for A100,
  // Gen5 x16 (64 GB/s) for H100 and H200, NVLink-C2C (450 GB/s) for GH200, whose H100-class GPU
  // has 96 GB of HBM3 and 480 GB of LPDDR5X beside it. The host memory of the PCIe parts is
  // an assumption: a typical 2-socket node's 2 TB shared by its 8 GPUs, 256 GiB each. A copy's
  // latency (launch and DMA set-up) is an assumption too: 10 us over PCIe, 5 us over C2C.
  static const std::array<DeviceSpec, 4> presets = {
      preset("a100", 312, 80, 25, {32, 0.01, 256}, {2039, 230}),
      preset("h100", 989, 80, 50, {64, 0.01, 256}, {3350, 450}),
      preset("h200", 989, 140, 50, {64, 0.01, 256}, {4800, 450}),
      preset("gh200", 989, 96, 50, {450, 0.005, 480}, {4000, 450}, 4),
  };

  return presets;
}

DeviceSpec parse_device_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  DeviceSpec d;
  d.name = "device";
  d.source = std::string(where);
  const auto fraction = [&r](double& field) {
    return [&r, &field](const json& v, const std::string& at) {
      field = r.number(v, at);
      if (field <= 0 || field > 1) r.fail(at, fmt::format("{}: expected a fraction in (0, 1]", field));
    };
  };
  const detail::Field efficiency[] = {
      {"F", false, "", fraction(d.efficiency_F)},
      {"B", false, "", fraction(d.efficiency_B)},
      {"W", false, "", fraction(d.efficiency_W)},
  };
  const detail::Field link[] = {
      {"latency_ms", false, "",
       [&](const json& v, const std::string& at) {
         d.link_latency_ms = r.number(v, at);
         if (d.link_latency_ms < 0 || d.link_latency_ms > 1e6)
           r.fail(at, fmt::format("{}: expected milliseconds in [0, 1e6]", d.link_latency_ms));
       }},
      {"gbytes_per_s", false, "",
       [&](const json& v, const std::string& at) {
         d.link_gbytes_per_s = r.number(v, at);
         // NOTE: 0 used to pass and meant an infinitely fast link; a link has a bandwidth.
         if (d.link_gbytes_per_s <= 0 || d.link_gbytes_per_s > 1e9)
           r.fail(at, fmt::format("{}: expected a positive GB/s up to 1e9", d.link_gbytes_per_s));
       }},
  };
  const detail::Field host_link[] = {
      {"gbytes_per_s", true, "missing",
       [&](const json& v, const std::string& at) {
         d.host_link_gbytes_per_s = r.number(v, at);
         if (d.host_link_gbytes_per_s <= 0 || d.host_link_gbytes_per_s > 1e9)
           r.fail(at, fmt::format("{}: expected a positive GB/s up to 1e9", d.host_link_gbytes_per_s));
       }},
      {"latency_ms", false, "",
       [&](const json& v, const std::string& at) {
         d.host_link_latency_ms = r.number(v, at);
         if (d.host_link_latency_ms < 0 || d.host_link_latency_ms > 1e6)
           r.fail(at, fmt::format("{}: expected milliseconds in [0, 1e6]", d.host_link_latency_ms));
       }},
      {"shared", false, "",
       [&](const json& v, const std::string& at) {
         if (!v.is_boolean()) r.fail(at, "expected true or false");
         d.host_link_shared = v.get<bool>();
       }},
  };
  const auto positive = [&r](double& field, double most, const char* unit) {
    return [&r, &field, most, unit](const json& v, const std::string& at) {
      field = r.number(v, at);
      if (field <= 0 || field > most)
        r.fail(at, fmt::format("{}: expected a positive {} up to {:g}", field, unit, most));
    };
  };
  const detail::Field hbm[] = {
      {"gbytes_per_s", true, "missing", positive(d.hbm_gbytes_per_s, 1e9, "GB/s")},
      {"efficiency", false, "", fraction(d.hbm_efficiency)},
  };
  const detail::Field tp_link[] = {
      {"gbytes_per_s", true, "missing", positive(d.tp_link_gbytes_per_s, 1e9, "GB/s")},
  };
  const detail::Field fields[] = {
      detail::schema_field(r, "ppsim.device/1"),
      {"name", false, "", [&](const json& v, const std::string& at) { d.name = r.name(v, at); }},
      {"peak_tflops", true, "missing",
       [&](const json& v, const std::string& at) {
         d.peak_tflops = r.number(v, at);
         if (d.peak_tflops <= 0 || d.peak_tflops > kMaxTflops)
           r.fail(at, fmt::format("{}: expected a positive TFLOP/s up to {}", d.peak_tflops, kMaxTflops));
       }},
      {"efficiency", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, efficiency); }},
      {"memory_gib", false, "",
       [&](const json& v, const std::string& at) {
         d.memory_gib = r.number(v, at);
         if (d.memory_gib <= 0 || d.memory_gib > kMaxGib)
           r.fail(at, fmt::format("{}: expected a positive GiB up to {}", d.memory_gib, kMaxGib));
       }},
      {"link", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, link); }},
      {"host_link", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, host_link); }},
      {"hbm", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, hbm); }},
      {"kernel_overhead_us", false, "",
       [&](const json& v, const std::string& at) {
         d.kernel_overhead_us = r.number(v, at);
         if (d.kernel_overhead_us < 0 || d.kernel_overhead_us > 1e6)
           r.fail(at, fmt::format("{}: expected microseconds in [0, 1e6]", d.kernel_overhead_us));
       }},
      {"tp_link", false, "",
       [&](const json& v, const std::string& at) { detail::read_fields(r, v, at, tp_link); }},
      {"gpus_per_node", false, "",
       [&](const json& v, const std::string& at) { d.gpus_per_node = r.integer(v, at, 1, 4096); }},
      {"gemm_curve", false, "",
       [&](const json& v, const std::string& at) {
         r.array(v, at);
         if (v.empty() || v.size() > kMaxGemmCurvePoints)
           r.fail(at, fmt::format("{} points: expected 1..{}", v.size(), kMaxGemmCurvePoints));
         d.gemm_curve.assign(v.size(), GemmPoint{});
         for (std::size_t i = 0; i < v.size(); ++i) {
           GemmPoint& g = d.gemm_curve[i];
           const detail::Field point[] = {
               {"gflop", true, "missing", positive(g.gflop, 1e9, "GFLOP")},
               {"fraction", true, "missing", fraction(g.fraction)},
           };
           const std::string here = fmt::format("{}/{}", at, i);
           detail::read_fields(r, v[i], here, point);
           if (i > 0 && g.gflop <= d.gemm_curve[i - 1].gflop)
             r.fail(here + "/gflop", fmt::format("{}: expected more than the point before ({})",
                                                 g.gflop, d.gemm_curve[i - 1].gflop));
         }
       }},
      {"source", false, "",
       [&](const json& v, const std::string& at) {
         d.source = fmt::format("{} ({})", where, excerpt(r.string(v, at), 200));
       }},
      {"host_memory_gib", false, "",
       [&](const json& v, const std::string& at) {
         d.host_memory_gib = r.number(v, at);
         if (d.host_memory_gib <= 0 || d.host_memory_gib > kMaxGib)
           r.fail(at, fmt::format("{}: expected a positive GiB up to {}", d.host_memory_gib, kMaxGib));
       }},
  };
  detail::read_fields(r, doc, "", fields);
  return d;
}

double gemm_fraction(const DeviceSpec& d, double flops) {
  const std::vector<GemmPoint>& c = d.gemm_curve;
  if (c.empty()) return 1;
  const double gflop = flops * 1e-9;
  if (gflop <= c.front().gflop) return c.front().fraction;
  if (gflop >= c.back().gflop) return c.back().fraction;
  std::size_t i = 1;
  while (c[i].gflop < gflop) ++i;
  const double t = std::log(gflop / c[i - 1].gflop) / std::log(c[i].gflop / c[i - 1].gflop);
  return c[i - 1].fraction + t * (c[i].fraction - c[i - 1].fraction);
}

std::string device_json(const DeviceSpec& d) {
  json doc = {{"schema", "ppsim.device/1"},
              {"name", d.name},
              {"source", d.source},
              {"peak_tflops", d.peak_tflops},
              {"efficiency", {{"F", d.efficiency_F}, {"B", d.efficiency_B}, {"W", d.efficiency_W}}}};
  if (d.memory_gib > 0) doc["memory_gib"] = d.memory_gib;
  json link = {{"latency_ms", d.link_latency_ms}};
  if (d.link_gbytes_per_s > 0) link["gbytes_per_s"] = d.link_gbytes_per_s;
  doc["link"] = link;
  if (d.host_link_gbytes_per_s > 0)
    doc["host_link"] = {{"gbytes_per_s", d.host_link_gbytes_per_s},
                        {"latency_ms", d.host_link_latency_ms},
                        {"shared", d.host_link_shared}};
  if (d.host_memory_gib > 0) doc["host_memory_gib"] = d.host_memory_gib;
  if (d.hbm_gbytes_per_s > 0)
    doc["hbm"] = {{"gbytes_per_s", d.hbm_gbytes_per_s}, {"efficiency", d.hbm_efficiency}};
  doc["kernel_overhead_us"] = d.kernel_overhead_us;
  if (d.tp_link_gbytes_per_s > 0) doc["tp_link"] = {{"gbytes_per_s", d.tp_link_gbytes_per_s}};
  doc["gpus_per_node"] = d.gpus_per_node;
  if (!d.gemm_curve.empty()) {
    json curve = json::array();
    for (const GemmPoint& g : d.gemm_curve) curve.push_back({{"gflop", g.gflop}, {"fraction", g.fraction}});
    doc["gemm_curve"] = curve;
  }
  return doc.dump(2) + "\n";
}

DeviceSpec load_device(const std::string& name) {
  if (name.size() > 5 && name.ends_with(".json"))
    return parse_device_json(read_text_file(name, "device file"), name);
  for (const DeviceSpec& d : device_presets())
    if (d.name == name) return d;
  std::string valid;
  for (const DeviceSpec& d : device_presets()) valid += (valid.empty() ? "" : ", ") + d.name;
  throw ConfigError(fmt::format("--device: unknown device '{}' (presets: {}, cpu; or a "
                                "ppsim.device/1 *.json file)",
                                excerpt(name), valid));
}

} // namespace ppsim
