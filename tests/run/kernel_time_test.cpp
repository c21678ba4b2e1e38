// Tests of the kernel-level cost model: the roofline of one GEMM, a layer's parts against its
// FLOPs, the memory-bound work, the tensor-parallel collectives, the optimizer step, and the
// device files that turn it on.
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/run/kernel_time.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <fmt/format.h>

using namespace ppsim;
using Catch::Matchers::Contains;
using ppsim::test::error_of;
using ppsim::test::round_device;

namespace {

ModelSpec small_gpt() {
  ModelSpec m;
  m.name = "gpt";
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4096;
  m.seq = 2048;
  m.microbatch_size = 2;
  m.vocab = 32000;
  return m;
}

} // namespace

TEST_CASE("a GEMM on the roofline: compute-bound when large, HBM-bound when skinny", "[model][kernel]") {
  DeviceSpec d = round_device();
  // 1000^3: 2e9 FLOPs at 50 TFLOP/s = 0.04 ms; its 6e6 bytes at 1000 GB/s = 0.006 ms
  CHECK(gemm_ms(d, 1000, 1000, 1000, 0.5, 2, 2) == Approx(0.04));
  // one row: 2e6 FLOPs = 4e-5 ms, but 2 (1000 + 1e6) + 2 * 1000 bytes = 0.002004 ms
  CHECK(gemm_ms(d, 1, 1000, 1000, 0.5, 2, 2) == Approx(0.002004));
  // a batch of them, and the fixed cost of one kernel
  CHECK(gemm_ms(d, 1, 1000, 1000, 0.5, 2, 2, 10) == Approx(0.02004));
  d.kernel_overhead_us = 5;
  CHECK(gemm_ms(d, 1000, 1000, 1000, 0.5, 2, 2) == Approx(0.045));
  CHECK(hbm_ms(d, 1e9) == Approx(1.0));
}

TEST_CASE("a decoder layer's kernels: GEMMs as its FLOPs say, memory-bound work beside, none in W", "[model][kernel]") {
  const DeviceSpec d = round_device();
  const ModelSpec m = small_gpt();
  const LayerTimes t = decoder_layer_times(m, d, {}, Recompute::none);
  const LayerEstimate e = decoder_layer(m, Recompute::none);
  const double rate = d.peak_tflops * 1e12 * 0.5 / 1e3;  // FLOPs per ms
  // these GEMMs are compute-bound: their time is the FLOP model's G at the efficiency
  CHECK(t.F.gemm == Approx(e.W_flops / rate));
  CHECK(t.B.gemm == Approx(e.W_flops / rate));
  CHECK(t.W.gemm == Approx(e.W_flops / rate));
  // flash attention: A forward, 2A backward, all in B (no weights)
  CHECK(t.F.attention == Approx((e.F_flops - e.W_flops) / rate));
  CHECK(t.B.attention == Approx((e.B_flops - e.W_flops) / rate));
  CHECK(t.W.attention == 0);
  // the norms, dropouts, residuals and GELU; W has no activation-gradient work
  CHECK(t.F.memory > 0);
  CHECK(t.B.memory > t.F.memory);
  CHECK(t.W.memory == 0);
  // F: 2 norms (2 x 2 bytes), 2 dropout-adds (3 x 2 + 1), GELU reads and writes f (2 x 2)
  const double T = 2048.0 * 2;
  CHECK(t.F.memory == Approx((T * 1024 * (2 * 4 + 2 * 7) + T * 4096 * 4) / 1e9));
  CHECK(t.F.tp_comm == 0);
  CHECK(t.R.total() == 0);
  // recomputation: selective is the attention core again, full the whole forward
  CHECK(decoder_layer_times(m, d, {}, Recompute::selective).R.attention == Approx(t.F.attention));
  CHECK(decoder_layer_times(m, d, {}, Recompute::full).R.total() == Approx(t.F.total()));
}

TEST_CASE("the unfused attention of 2021 moves the s x s scores through HBM", "[model][kernel]") {
  const DeviceSpec d = round_device();
  ModelSpec m = small_gpt();
  const LayerTimes flash = decoder_layer_times(m, d, {}, Recompute::none);
  m.flash_attention = false;
  const LayerTimes unfused = decoder_layer_times(m, d, {}, Recompute::none);
  // softmax (read, write) and dropout (read, write, a byte of mask) of b a s^2 values
  const double scores = 2.0 * 16 * 2048 * 2048;
  CHECK(unfused.F.memory - flash.F.memory == Approx(scores * 9 / 1e9));
  CHECK(unfused.B.memory - flash.B.memory == Approx(scores * 11 / 1e9));
  CHECK(unfused.F.attention >= flash.F.attention);  // its batched GEMMs of head width 64
  CHECK(unfused.F.gemm == Approx(flash.F.gemm));
}

TEST_CASE("tensor parallelism: the ranks' share, two collectives each way, sequence parallelism", "[model][kernel]") {
  const DeviceSpec d = round_device();
  const ModelSpec m = small_gpt();
  const LayerTimes one = decoder_layer_times(m, d, {}, Recompute::none);
  const LayerTimes sp = decoder_layer_times(m, d, {.tp = 4}, Recompute::none);
  const LayerTimes no_sp = decoder_layer_times(m, d, {.tp = 4, .sequence_parallel = false}, Recompute::none);
  CHECK(sp.F.gemm == Approx(one.F.gemm / 4));
  // each collective moves 2 (t - 1) / t of s b h two-byte values over 200 GB/s
  const double per = 2.0 * 3 / 4 * 2048 * 2 * 1024 * 2 / 200e9 * 1e3;
  CHECK(sp.F.tp_comm == Approx(2 * per));
  CHECK(sp.B.tp_comm == Approx(2 * per));
  CHECK(sp.W.tp_comm == 0);
  // without sequence parallelism the norms and dropouts run on every token of every rank
  CHECK(no_sp.F.memory > sp.F.memory);
  CHECK(no_sp.F.tp_comm == Approx(sp.F.tp_comm));
}

TEST_CASE("the optimizer step: 38 bytes per parameter through HBM; model costs use the kernels", "[model][kernel]") {
  const DeviceSpec d = round_device();
  const ModelSpec m = small_gpt();
  CHECK(adam_bytes_per_param(m) == 38);
  CHECK(optimizer_ms(m, d, 1e9) == Approx(38.0));
  DeviceSpec flops_only = d;
  flops_only.hbm_gbytes_per_s = 0;
  CHECK_FALSE(kernel_level(flops_only));
  CHECK(optimizer_ms(m, flops_only, 1e9) == 0);
  const ModelCosts mc = model_costs(m, d, default_layout(4, 2), 2, {});
  REQUIRE(mc.times.size() == 2);
  REQUIRE(mc.optimizer_ms.size() == 2);
  CHECK(ticks_to_ms(mc.costs.stages[0].F) == Approx(mc.times[0].F.total()).epsilon(1e-6));
  CHECK(ticks_to_ms(mc.costs.stages[1].W) == Approx(mc.times[1].W.total()).epsilon(1e-6));
  CHECK(mc.optimizer_ms[1] == Approx(optimizer_ms(m, d, mc.costs.stages[1].params)));
  // ZeRO-1 steps a replica's shard
  const ModelCosts zero = model_costs(m, d, default_layout(4, 2), 2, {.dp = 4, .zero = 1});
  CHECK(zero.optimizer_ms[1] == Approx(optimizer_ms(m, d, mc.costs.stages[1].params / 4)));
  // without HBM bandwidth: FLOPs over the rate, as before
  const ModelCosts old = model_costs(m, flops_only, default_layout(4, 2), 2, {});
  CHECK(old.times.empty());
  CHECK(old.optimizer_ms[0] == 0);
}

TEST_CASE("device and model files: hbm, tp_link, kernel_overhead_us, flash_attention", "[io][model][kernel]") {
  const DeviceSpec d = parse_device_json(
      R"({"schema": "ppsim.device/1", "peak_tflops": 100, "hbm": {"gbytes_per_s": 2000, "efficiency": 0.9},
          "kernel_overhead_us": 3, "tp_link": {"gbytes_per_s": 300}})",
      "d.json");
  CHECK(d.hbm_gbytes_per_s == 2000);
  CHECK(d.hbm_efficiency == 0.9);
  CHECK(d.kernel_overhead_us == 3);
  CHECK(d.tp_link_gbytes_per_s == 300);
  CHECK(kernel_level(d));
  CHECK_FALSE(kernel_level(parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100})", "d.json")));
  CHECK(kernel_level(load_device("a100")));
  CHECK(load_device("h200").hbm_gbytes_per_s == 4800);
  const auto bad = [](const std::string& rest) {
    return error_of<ConfigError>([&] {
      (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100, )" + rest + "}", "d.json");
    });
  };
  CHECK_THAT(bad(R"("hbm": {"efficiency": 0.5})"), Contains("d.json: /hbm/gbytes_per_s: missing"));
  CHECK_THAT(bad(R"("hbm": {"gbytes_per_s": 0})"), Contains("/hbm/gbytes_per_s: 0: expected a positive GB/s"));
  CHECK_THAT(bad(R"("hbm": {"gbytes_per_s": 100, "efficiency": 1.5})"), Contains("/hbm/efficiency: 1.5: expected a fraction"));
  CHECK_THAT(bad(R"("kernel_overhead_us": -1)"), Contains("/kernel_overhead_us"));
  CHECK_THAT(bad(R"("tp_link": {"gbytes_per_s": 1e12})"), Contains("/tp_link/gbytes_per_s"));
  const ModelSpec m = parse_model_json(
      R"({"schema": "ppsim.model/1", "layers": 2, "hidden": 64, "heads": 4, "seq": 128, "vocab": 100,
          "flash_attention": false})",
      "m.json");
  CHECK_FALSE(m.flash_attention);
  CHECK_THAT(error_of<ConfigError>([] {
               (void)parse_model_json(R"({"schema": "ppsim.model/1", "layers": 2, "hidden": 64, "heads": 4, "seq": 128, "vocab": 100, "flash_attention": 1})", "m.json");
             }),
             Contains("m.json: /flash_attention: expected true or false"));
}

TEST_CASE("a device's GEMM curve: read, interpolated in log GFLOP, applied per GEMM, written back", "[io][model][kernel]") {
  DeviceSpec d = parse_device_json(
      R"({"schema": "ppsim.device/1", "peak_tflops": 100, "hbm": {"gbytes_per_s": 1e6},
          "gemm_curve": [{"gflop": 0.01, "fraction": 0.2}, {"gflop": 1, "fraction": 0.6},
                         {"gflop": 100, "fraction": 1}], "source": "measured by hand"})",
      "d.json");
  REQUIRE(d.gemm_curve.size() == 3);
  CHECK(d.source == "d.json (measured by hand)");
  // the ends hold beyond them; between points the fraction is linear in log10(GFLOP)
  CHECK(gemm_fraction(d, 1e6) == 0.2);
  CHECK(gemm_fraction(d, 1e7) == 0.2);
  CHECK(gemm_fraction(d, 1e9) == Approx(0.6));
  CHECK(gemm_fraction(d, 1e8) == Approx(0.4));   // halfway from 0.01 to 1 GFLOP
  CHECK(gemm_fraction(d, 1e10) == Approx(0.8));  // halfway from 1 to 100
  CHECK(gemm_fraction(d, 1e15) == 1);
  CHECK(gemm_fraction(round_device(), 1e3) == 1);  // no curve: the kind's efficiency
  // a 1000^3 GEMM (2 GFLOP, fraction 0.6 + 0.4 log10(2) / 2) at 100 TFLOP/s x 0.5
  const double f = 0.6 + 0.4 * std::log10(2.0) / 2;
  CHECK(gemm_ms(d, 1000, 1000, 1000, 0.5, 2, 2) == Approx(2e9 / (100e12 * 0.5 * f) * 1e3));
  // the same layer is slower with the curve than without, and only in its GEMMs
  DeviceSpec flat = d;
  flat.gemm_curve.clear();
  const LayerTimes with = decoder_layer_times(small_gpt(), d, {}, Recompute::none);
  const LayerTimes without = decoder_layer_times(small_gpt(), flat, {}, Recompute::none);
  CHECK(with.F.gemm > without.F.gemm);
  CHECK(with.F.memory == without.F.memory);
  // device_json reads back to the same numbers
  d.memory_gib = 64;
  d.link_latency_ms = 0.002;
  d.link_gbytes_per_s = 12.5;
  d.kernel_overhead_us = 0.25;
  const DeviceSpec back = parse_device_json(device_json(d), "back.json");
  CHECK(back.peak_tflops == d.peak_tflops);
  CHECK(back.efficiency_F == d.efficiency_F);
  CHECK(back.hbm_gbytes_per_s == d.hbm_gbytes_per_s);
  CHECK(back.memory_gib == 64);
  CHECK(back.link_gbytes_per_s == 12.5);
  CHECK(back.kernel_overhead_us == 0.25);
  REQUIRE(back.gemm_curve.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back.gemm_curve[i].gflop == d.gemm_curve[i].gflop);
    CHECK(back.gemm_curve[i].fraction == d.gemm_curve[i].fraction);
  }
  CHECK(device_json(back).find("\"gemm_curve\"") != std::string::npos);
}

TEST_CASE("a GEMM curve that is not one is refused, naming the point", "[io][model][kernel]") {
  const auto bad = [](const std::string& curve) {
    return error_of<ConfigError>([&] {
      (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100, "gemm_curve": )" + curve + "}",
                              "d.json");
    });
  };
  CHECK_THAT(bad("[]"), Contains("d.json: /gemm_curve: 0 points: expected 1..64"));
  CHECK_THAT(bad("{}"), Contains("/gemm_curve: expected an array"));
  CHECK_THAT(bad(R"([{"gflop": 1}])"), Contains("/gemm_curve/0/fraction: missing"));
  CHECK_THAT(bad(R"([{"gflop": 0, "fraction": 1}])"), Contains("/gemm_curve/0/gflop: 0: expected a positive GFLOP"));
  CHECK_THAT(bad(R"([{"gflop": 1, "fraction": 0}])"), Contains("/gemm_curve/0/fraction: 0: expected a fraction"));
  CHECK_THAT(bad(R"([{"gflop": 1, "fraction": 1.5}])"), Contains("/gemm_curve/0/fraction"));
  CHECK_THAT(bad(R"([{"gflop": 1, "fraction": 1, "m": 3}])"), Contains("/gemm_curve/0/m: unknown key (valid: gflop, fraction)"));
  CHECK_THAT(bad(R"([{"gflop": 2, "fraction": 1}, {"gflop": 2, "fraction": 1}])"),
             Contains("/gemm_curve/1/gflop: 2: expected more than the point before (2)"));
  std::string many = "[";
  for (int i = 1; i <= 65; ++i) many += fmt::format("{}{{\"gflop\": {}, \"fraction\": 1}}", i > 1 ? "," : "", i);
  CHECK_THAT(bad(many + "]"), Contains("/gemm_curve: 65 points: expected 1..64"));
  CHECK_THAT(bad("[1]"), Contains("/gemm_curve/0: expected an object"));
}
