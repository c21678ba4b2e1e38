// Tests of the calibration: gradients of the split backward, accounting, options, the cost file.
#include "model/calibrate.hpp"
#include "model/cpu_device.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

using namespace ppsim;
using namespace ppsim::calibrate;

namespace {

/// A small real calibration (a few ms of GEMMs); its timings are only checked for sanity.
const CalibrationResult& small_result() {
  static const CalibrationResult r = run_calibration(parse_calibration_spec(
      "dim=32,tokens=16,blocks=3:2:2:3,repeats=3,threads=1"));
  return r;
}

/// A result with fixed numbers, so its document is byte-stable.
CalibrationResult synthetic_result() {
  CalibrationResult r;
  r.options = parse_calibration_spec("dim=64,tokens=32,blocks=2:1,comm=0.125");
  r.repeats = 7;
  r.warmups = 2;
  BlockMeasurement m{2, flops_per_block(64, 32) * 2, {1.234567, 1.2, 1.3, 0.081, 6.8, 7},
                     {1.5, 1.4, 1.6, 0.13, 5.6, 7}, {1.75, 1.7, 1.8, 0.05, 4.8, 7},
                     {3.2, 3.1, 3.3, 0.06, 5.2, 7}};
  r.measurements = {m};
  r.stages = {{2, 1.234567, 1.5, 1.75, 3.2, 1.0, 2.0, 40960, 81920},
              {1, 0.617284, 0.75, 0.875, 1.6, 0.5, 1.0, 20480, 40960}};
  r.memory_unit_bytes = 40960;
  r.comm = {8192, 0.000321, 25.5, true, 0.125};
  r.gradient_check = {40, 24, 2, "f32", 3e-7, 2e-7, 1e-4, 8, true};
  r.machine = {"Test CPU (family 6, model 1)", 2, "2.6.3", "avx512_core_amx", "dnnl_sgemm", 0.5};
  return r;
}

} // namespace

TEST_CASE("the split B and W equal a double-precision full backward chained across blocks",
          "[calibrate]") {
  const int blocks = GENERATE(1, 2, 3, 4);
  const int dim = GENERATE(8, 40);
  CAPTURE(blocks, dim);
  const auto check = check_gradients(dim, 24, blocks);
  CHECK(check.passed);
  CHECK(check.max_rel_error < 1e-5);
  CHECK(check.fd_max_rel_error < 1e-4);
  CHECK(check.fd_probes == 4 * blocks);
  CHECK(check.blocks == blocks);
}

TEST_CASE("the gradient check catches the seed's backward that reuses do for every block",
          "[calibrate]") {
  GradientCheckOptions buggy;
  buggy.seed_bug = true;
  // With one block there is nothing to chain, so the seed is right there.
  CHECK(check_gradients(16, 12, 1, buggy).passed);
  for (int blocks : {2, 3}) {
    CAPTURE(blocks);
    const auto check = check_gradients(16, 12, blocks, buggy);
    CHECK_FALSE(check.passed);
    CHECK(check.max_rel_error > 1e-2);
  }
}

TEST_CASE("bf16 GEMMs pass a looser gradient check where the CPU has them, else a clear error",
          "[calibrate]") {
  GradientCheckOptions o;
  o.dtype = DType::bf16;
  if (bf16_supported()) {
    const auto check = check_gradients(40, 24, 3, o);
    CHECK(check.passed);
    CHECK(check.dtype == "bf16");
    CHECK(check.max_rel_error < 5e-2);
  } else {
    CHECK_THROWS_WITH(check_gradients(40, 24, 3, o), Catch::Contains("bf16"));
  }
}

TEST_CASE("FLOPs are 16 T D^2 per block and kind, and buffers are counted in bytes",
          "[calibrate]") {
  CHECK(flops_per_block(512, 512) == 16.0 * 512 * 512 * 512);
  CHECK(flops_per_block(1024, 2048) == 16.0 * 2048 * 1024 * 1024);
  // dim 8, tokens 4, 2 blocks of f32: x and g 3 × 32 values each, h and dh 2 × 128 each,
  // W1 W2 dW1 dW2 2 × 256 values each, all 4 bytes.
  CHECK(stage_buffer_bytes({8, 4, 2, DType::f32}) == (2 * 3 * 32 + 2 * 2 * 128 + 4 * 2 * 256) * 4.0);
  // bf16 halves the activations and weights, not the f32 gradients.
  CHECK(stage_buffer_bytes({8, 4, 2, DType::bf16}) ==
        (2 * 3 * 32 + 2 * 2 * 128 + 2 * 2 * 256) * 2.0 + 2 * 2 * 256 * 4.0);
}

TEST_CASE("the memory deltas come from the tensors the MLP keeps", "[calibrate]") {
  const auto& r = small_result();
  const double act = 16.0 * 32 * 4;  // tokens × dim × 4 bytes
  REQUIRE(r.stages.size() == 4);
  CHECK(r.memory_unit_bytes == 3 * 5 * act);  // stage 0: x and h of 3 blocks
  CHECK(r.stages[0].MB_bytes == 3 * 5 * act);
  CHECK(r.stages[0].MW_bytes == 3 * 10 * act);  // x, h, do and dh
  // The messages across the stage's boundary: its output and its input gradient, T x D each.
  for (const auto& st : r.stages) {
    CHECK(st.act_bytes == act);
    CHECK(st.grad_bytes == act);
  }
  CHECK(to_cost_spec(r).stages[0].act_bytes == act);
  CHECK(r.stages[0].MB == 1.0);
  CHECK(r.stages[0].MW == 2.0);  // W needs more than F kept: B raises memory
  CHECK(r.stages[1].MB == Approx(2.0 / 3.0));
  CHECK(r.stages[1].MW == Approx(4.0 / 3.0));
  CHECK(r.stages[1].blocks == 2);
  CHECK(r.stages[3].MB == 1.0);
  // Two distinct block counts were timed, in stage order.
  REQUIRE(r.measurements.size() == 2);
  CHECK(r.measurements[0].blocks == 3);
  CHECK(r.measurements[1].blocks == 2);
  CHECK(r.measurements[0].flops == 3 * flops_per_block(32, 16));
  CHECK(r.repeats == 3);
  CHECK(r.measurements[0].F.samples == 3);
  CHECK(r.stages[1].F_ms == r.measurements[1].F.median_ms);
  CHECK(r.stages[3].W_ms == r.measurements[0].W.median_ms);
  for (const auto* k : {&r.measurements[0].F, &r.measurements[0].B, &r.measurements[0].W}) {
    CHECK(k->min_ms <= k->median_ms);
    CHECK(k->median_ms <= k->max_ms);
    CHECK(k->median_ms > 0);
    CHECK(k->gflops > 0);
  }
  CHECK(r.gradient_check.passed);
  CHECK(r.gradient_check.blocks == 3);
  CHECK(r.comm.bytes == act);
  CHECK_FALSE(r.comm.overridden);
  CHECK(r.comm.used_ms == r.comm.measured_ms);
  CHECK_FALSE(r.machine.onednn_version.empty());
  CHECK_FALSE(r.machine.isa.empty());
}

TEST_CASE("a calibrated cost file reads back through parse_cost_json with the same numbers",
          "[calibrate]") {
  for (const auto& r : {small_result(), synthetic_result()}) {
    const std::string text = cost_file_json(r);
    const CostSpec parsed = parse_cost_json(text, "calibrated.json");
    CostSpec direct = to_cost_spec(r);
    direct.source = parsed.source;
    CHECK(parsed == direct);
    REQUIRE(parsed.stages.size() == r.stages.size());
    for (std::size_t s = 0; s < r.stages.size(); ++s) {
      CHECK(parsed.stages[s].F == ms_to_ticks(r.stages[s].F_ms, "F"));
      CHECK(parsed.stages[s].BW == ms_to_ticks(r.stages[s].BW_ms, "BW"));
      CHECK(parsed.stages[s].MW == r.stages[s].MW);
    }
    CHECK(parsed.memory_unit_bytes == r.memory_unit_bytes);
  }
  const auto spec = to_cost_spec(synthetic_result());
  CHECK(spec.stages[0].F == 1'234'567);
  CHECK(spec.stages[1].W == 875'000);
  CHECK(spec.comm == 125'000);
  CHECK(spec.stages[0].FB == -1);
}

TEST_CASE("the cost file holds kernels, the gradient check and the provenance", "[calibrate]") {
  const auto doc = nlohmann::json::parse(cost_file_json(small_result()));
  CHECK(doc.at("schema") == "ppsim.costs/1");
  for (const char* kind : {"F", "B", "W"}) {
    CAPTURE(kind);
    for (const char* field : {"median_ms", "min_ms", "max_ms", "gflops", "spread"})
      CHECK(doc.at("kernels").at(kind).at(field).is_number());
  }
  CHECK(doc.at("kernels").at("by_blocks").size() == 2);
  CHECK(doc.at("gradient_check").at("passed") == true);
  CHECK(doc.at("gradient_check").at("max_rel_error").is_number());
  for (const char* field : {"onednn_version", "isa", "cpu_model", "threads"})
    CHECK(doc.at("provenance").contains(field));
  CHECK(doc.at("provenance").at("threads") == 1);
  CHECK(doc.at("comm_estimate").at("label").get<std::string>().find("ESTIMATE") == 0);
  CHECK(doc.at("stages").size() == 4);
  CHECK(doc.at("stages").at(0).at("MB") == 1.0);
}

TEST_CASE("the same calibration result gives a byte-identical cost file", "[calibrate]") {
  const auto text = cost_file_json(synthetic_result());
  CHECK(text == cost_file_json(synthetic_result()));
  CHECK(text.back() == '\n');
  const auto doc = nlohmann::json::parse(text);
  CHECK(doc.at("comm") == 0.125);
  CHECK(doc.at("comm_estimate").at("overridden") == true);
  CHECK(doc.at("comm_estimate").at("measured_ms") == 0.000321);
  CHECK(doc.at("stages").at(0).at("F") == 1.234567);
  CHECK(doc.at("kernels").at("F").at("gflops") == 6.8);
  CHECK_FALSE(doc.at("kernels").contains("by_blocks"));
}

TEST_CASE("the simulator runs on calibrated costs with the calibrated memory unit",
          "[calibrate]") {
  auto spec = to_cost_spec(small_result());
  spec.stages = {spec.stages[0], spec.stages[0], spec.stages[0], spec.stages[0]};
  const Run run = run_schedule(make_schedule("1f1b", {.devices = 4, .microbatches = 8}), spec);
  // 1F1B keeps p micro-batches on device 0: 4 M_B, in bytes 4 × 3 blocks × x and h.
  CHECK(run.metrics.peak_memory == 4.0);
  CHECK(run.metrics.peak_memory_bytes == 4.0 * spec.memory_unit_bytes);
  CHECK(run.metrics.cost > 0);
}

TEST_CASE("a comm override replaces the estimate and is recorded as given", "[calibrate]") {
  const auto r = run_calibration(parse_calibration_spec("dim=16,tokens=8,blocks=1,repeats=1,comm=0.25"));
  CHECK(r.comm.overridden);
  CHECK(r.comm.used_ms == 0.25);
  CHECK(to_cost_spec(r).comm == 250'000);
}

TEST_CASE("calibration specs parse into options", "[calibrate]") {
  const auto o = parse_calibration_spec("dim=1024,tokens=2048,blocks=2");
  CHECK(o.dim == 1024);
  CHECK(o.tokens == 2048);
  CHECK(o.blocks_per_stage == std::vector<int>{2});
  CHECK(o.threads == 1);
  CHECK(o.repeats == 0);
  CHECK(o.dtype == "f32");
  CHECK_FALSE(o.comm_ms);
  const auto four = parse_calibration_spec(" dim=64 , tokens=32, blocks=2, stages=4, threads=2, "
                                           "repeats=9, dtype=bf16, comm=0.5");
  CHECK(four.blocks_per_stage == std::vector<int>{2, 2, 2, 2});
  CHECK(four.threads == 2);
  CHECK(four.repeats == 9);
  CHECK(four.dtype == "bf16");
  CHECK(four.comm_ms == 0.5);
  CHECK(parse_calibration_spec("dim=8,tokens=8,blocks=3:2:2:3").blocks_per_stage ==
        std::vector<int>{3, 2, 2, 3});
  CHECK(parse_calibration_spec("dim=8,tokens=8,blocks=3:2,stages=2").blocks_per_stage ==
        std::vector<int>{3, 2});
}

TEST_CASE("bad calibration options are refused with the value named", "[calibrate]") {
  using Catch::Contains;
  CHECK_THROWS_AS(parse_calibration_spec("dim=0,tokens=8,blocks=1"), ConfigError);
  CHECK_THROWS_WITH(parse_calibration_spec("dim=0,tokens=8,blocks=1"), Contains("dim"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=-4,blocks=1"), Contains("-4"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=0"), Contains("blocks"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=2:0"), Contains("blocks"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8"), Contains("missing blocks"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=1,dtype=fp8"),
                    Contains("unknown value 'fp8'"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=1,width=3"),
                    Contains("unknown key 'width'"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,dim=9,tokens=8,blocks=1"), Contains("twice"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8x,tokens=8,blocks=1"), Contains("'8x'"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=1,threads=0"),
                    Contains("threads"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=1,comm=-1"), Contains("comm"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=8,tokens=8,blocks=3:2,stages=4"),
                    Contains("stages=4"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=99999999999,tokens=8,blocks=1"),
                    Contains("99999999999"));
  CHECK_THROWS_AS(parse_calibration_spec(""), ConfigError);
  CHECK_THROWS_AS(parse_calibration_spec("dim=8,,tokens=8,blocks=1"), ConfigError);
}

TEST_CASE("sizes that would exhaust memory are refused before anything is allocated",
          "[calibrate]") {
  CalibrationOptions o;
  o.dim = 65536;
  o.tokens = 65536;
  o.blocks_per_stage = {4};
  CHECK(calibration_bytes(o) > kMaxCalibrationBytes);
  // A bad_alloc (or the machine swapping) instead of this error would mean it allocated first.
  CHECK_THROWS_AS(run_calibration(o), ConfigError);
  CHECK_THROWS_WITH(run_calibration(o), Catch::Contains("GiB") && Catch::Contains("8 GiB limit"));
  CHECK_THROWS_WITH(parse_calibration_spec("dim=16384,tokens=1000000,blocks=1"),
                    Catch::Contains("GiB"));
  CalibrationOptions fine = o;
  fine.dim = 256;
  fine.tokens = 256;
  CHECK(calibration_bytes(fine) < kMaxCalibrationBytes);
  CHECK_NOTHROW(validate_options(fine));
  fine.dtype = "int4";
  CHECK_THROWS_WITH(validate_options(fine), Catch::Contains("int4"));
  fine.dtype = "f32";
  fine.blocks_per_stage = {};
  CHECK_THROWS_AS(validate_options(fine), ConfigError);
}

TEST_CASE("the GEMM thread count is pinned while calibrating and restored after",
          "[calibrate]") {
  const int before = gemm_threads();
  {
    const ScopedGemmThreads pinned(3);
    CHECK(gemm_threads() == 3);
  }
  CHECK(gemm_threads() == before);
  const auto r = run_calibration(parse_calibration_spec("dim=8,tokens=8,blocks=1,repeats=1,threads=3"));
  CHECK(gemm_threads() == before);
  CHECK(cost_file_json(r).find("\"threads\": 3") != std::string::npos);
  CHECK(cpu_model() != "");
}

TEST_CASE("calibrated kernels reach a plausible GFLOP/s and more blocks take longer",
          "[.timing]") {
  const auto r = run_calibration(parse_calibration_spec("dim=256,tokens=256,blocks=4:2,repeats=9"));
  INFO(calibration_summary(r));
  REQUIRE(r.measurements.size() == 2);
  CHECK(r.measurements[0].F.gflops > 10);
  CHECK(r.stages[0].F_ms > r.stages[1].F_ms);
  CHECK(r.stages[0].B_ms > r.stages[1].B_ms);
  CHECK(r.measurements[0].F.spread < 1.0);
}

TEST_CASE("two GEMM threads run a large stage faster than one", "[.timing]") {
  const auto one = run_calibration(parse_calibration_spec("dim=512,tokens=512,blocks=1,repeats=5"));
  const auto two =
      run_calibration(parse_calibration_spec("dim=512,tokens=512,blocks=1,repeats=5,threads=2"));
  CHECK(two.stages[0].F_ms < 0.8 * one.stages[0].F_ms);
}

// ----------------------------------------------------------------------------------------------
// The repeat rule, with made-up timings

namespace {

// n samples around `median`: a quiet kernel (every sample within ±1%).
std::vector<double> quiet(double median, int n) {
  std::vector<double> s;
  for (int i = 0; i < n; ++i) s.push_back(median * (0.99 + 0.02 * i / std::max(1, n - 1)));
  return s;
}

// n samples whose middle half spans ±`half` of the median (uniform over ±2·half).
std::vector<double> noisy(double median, double half, int n) {
  std::vector<double> s;
  for (int i = 0; i < n; ++i)
    s.push_back(median * (1 - 2 * half + 4 * half * i / std::max(1, n - 1)));
  return s;
}

} // namespace

TEST_CASE("noise is the interquartile range over the median", "[model][calibrate]") {
  CHECK(noise_of({}) == 0);
  CHECK(noise_of({5}) == 0);
  CHECK(noise_of({1, 2, 3, 4, 5}) == Approx((4.0 - 2.0) / 3.0));
  CHECK(noise_of({10, 10, 10, 10, 50}) == 0);  // one outlier is not noise
  CHECK(noise_of(noisy(2.0, 0.10, 41)) == Approx(0.20).epsilon(0.01));
  CHECK(median_of({3, 1, 2}) == 2);
  CHECK(median_of({4, 1, 2, 3}) == 2.5);
}

TEST_CASE("the repeat rule stops at once on quiet timings", "[model][calibrate]") {
  const std::vector<std::vector<double>> q{quiet(1, 21), quiet(2, 21), quiet(1, 21), quiet(3, 21)};
  const auto d = decide_repeats(q, {}, 500);
  CHECK(d.verdict == RepeatDecision::Verdict::quiet);
  CHECK(d.extra == 0);
}

TEST_CASE("the repeat rule asks for half as many again while a kind is noisy",
          "[model][calibrate]") {
  const std::vector<std::vector<double>> first{quiet(1, 20), noisy(2, 0.2, 20), quiet(1, 20),
                                               quiet(3, 20)};
  const auto d = decide_repeats(first, {}, 500);
  CHECK(d.verdict == RepeatDecision::Verdict::more);
  CHECK(d.extra == 10);
  // Few samples: at least 5 more.
  const std::vector<std::vector<double>> few{noisy(2, 0.2, 6)};
  CHECK(decide_repeats(few, {}, 10).extra == 5);
  // Fewer than min_judged samples are not judged: --repeats 3 never counts as noisy.
  const std::vector<std::vector<double>> three{noisy(2, 0.3, 3)};
  CHECK(decide_repeats(three, {}, 10).verdict == RepeatDecision::Verdict::quiet);
}

TEST_CASE("the repeat rule stops when every noisy median has settled", "[model][calibrate]") {
  const std::vector<std::vector<double>> now{quiet(1, 30), noisy(2, 0.2, 30), quiet(1, 30),
                                             quiet(3, 30)};
  // B's median moved by 0.5% since the previous round: stable (the quiet kinds may move).
  const auto settled = decide_repeats(now, {1.5, 2.01, 1, 3}, 900);
  CHECK(settled.verdict == RepeatDecision::Verdict::stable);
  // By 5%: not yet.
  const auto moving = decide_repeats(now, {1, 2.1, 1, 3}, 900);
  CHECK(moving.verdict == RepeatDecision::Verdict::more);
  CHECK(moving.extra == 15);
}

TEST_CASE("the repeat rule stops at its time and sample caps", "[model][calibrate]") {
  const RepeatRule rule;
  const std::vector<std::vector<double>> now{noisy(2, 0.2, 40)};
  CHECK(decide_repeats(now, {2.5}, rule.time_cap_ms).verdict == RepeatDecision::Verdict::capped);
  CHECK(decide_repeats(now, {2.5}, rule.time_cap_ms - 1).verdict ==
        RepeatDecision::Verdict::more);
  const std::vector<std::vector<double>> full{noisy(2, 0.2, rule.max_samples)};
  CHECK(decide_repeats(full, {2.5}, 0).verdict == RepeatDecision::Verdict::capped);
  // Never past the sample cap.
  const std::vector<std::vector<double>> near{noisy(2, 0.2, rule.max_samples - 3)};
  CHECK(decide_repeats(near, {2.5}, 0).extra == 3);
  // A stricter rule of one's own.
  const RepeatRule strict{.noisy_spread = 0.5, .stable_change = 0.01, .time_cap_ms = 10,
                          .max_samples = 100, .min_judged = 5};
  CHECK(decide_repeats(now, {}, 0, strict).verdict == RepeatDecision::Verdict::quiet);
}

TEST_CASE("noisy kinds are warnings that state the threshold and whether the cap was hit",
          "[model][calibrate]") {
  BlockMeasurement m;
  m.blocks = 2;
  m.F.samples = m.B.samples = m.W.samples = m.BW.samples = 57;
  m.B.noise = 0.12;
  m.W.noise = 0.04;  // under the 5% threshold
  m.extra_rounds = 3;
  auto w = noise_warnings(m);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "timings are noisy: B 12% of 2 blocks over 57 samples (3 extra rounds) "
                "(interquartile range / median over 5%); costs may be off as much: calibrate on "
                "a quiet machine");
  m.capped = true;
  m.F.noise = 0.3;
  w = noise_warnings(m);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::StartsWith("timings are noisy: F 30%, B 12% of 2 blocks over 57 "
                                     "samples, still moving at the cap (10 s or 1001 samples)"));
  CHECK(w[0].size() < 220);  // one line for both kinds (it was a line of ~330 characters per kind)
  m.F.noise = 0.01;
  m.B.noise = 0.01;
  CHECK(noise_warnings(m).empty());
}

TEST_CASE("this CPU as a device: the curve is each GEMM's rate over the best, F/B/W give back their times", "[calibrate][cpu-device]") {
  // 1, 8 and 64 GFLOP at 10, 40 and 50 GFLOP/s
  const std::vector<GemmTiming> grid = {{1e9, 100}, {8e9, 200}, {64e9, 1280}};
  const GemmCurveFit fit = fit_gemm_curve(grid);
  CHECK(fit.best_gflops == Approx(50));
  REQUIRE(fit.curve.size() == 3);
  CHECK(fit.curve[0].gflop == Approx(1));
  CHECK(fit.curve[0].fraction == Approx(0.2));
  CHECK(fit.curve[1].fraction == Approx(0.8));
  CHECK(fit.curve[2].fraction == Approx(1));
  DeviceSpec d;
  d.peak_tflops = fit.best_gflops / 1000;
  d.gemm_curve = fit.curve;
  // a kind whose 8-GFLOP GEMM took 400 ms (20 GFLOP/s, half of what the curve says at 8 GFLOP)
  // and whose 64-GFLOP GEMM took 2560 ms (25 GFLOP/s, half of 50)
  const std::vector<GemmTiming> kind = {{8e9, 400}, {64e9, 2560}};
  const double e = fitted_efficiency(kind, d);
  CHECK(e == Approx(0.5));
  // the model gives back the measured total
  double model_ms = 0;
  for (const GemmTiming& t : kind) model_ms += t.flops / (d.peak_tflops * 1e12 * e * gemm_fraction(d, t.flops)) * 1e3;
  CHECK(model_ms == Approx(2960));
  CHECK_THROWS_AS(fit_gemm_curve(std::vector<GemmTiming>{{1e9, 0}}), ConfigError);
}
