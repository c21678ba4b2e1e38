// Tests of the executed model: activation slots that share weights, data, loss, reference.
#include "exec/model.hpp"
#include "model/calibrate.hpp"
#include "model/mlp.hpp"
#include "ppsim/schedules/registry.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace ppsim;
using namespace ppsim::exec;

TEST_CASE("StageMlp's activation slots share the weights: two micro-batches in flight give the "
          "gradients of running them one after the other",
          "[exec][calibrate]") {
  const calibrate::MlpShape shape{16, 8, 2, calibrate::DType::f32};
  const ModelShape ms{16, 8, 2};
  const auto x0 = microbatch_input(3, 0, ms), x1 = microbatch_input(3, 1, ms);
  const auto g0 = microbatch_label(3, 0, ms), g1 = microbatch_label(3, 1, ms);

  calibrate::StageMlp one(shape, 5);
  one.set_input(x0);
  one.forward();
  const auto out0 = one.output();
  one.set_output_grad(g0);
  one.backward_input();
  const auto dx0 = one.input_grad();
  one.backward_weight();
  one.set_input(x1);
  one.forward();
  one.set_output_grad(g1);
  one.backward_fused();

  calibrate::StageMlp two(shape, 5, false, 2);
  REQUIRE(two.slots() == 2);
  two.set_input(x0, 0);
  two.set_input(x1, 1);
  two.forward(0);
  two.forward(1);
  two.set_output_grad(g1, 1);
  two.set_output_grad(g0, 0);
  two.backward_fused(1);
  two.backward_input(0);
  CHECK(two.output(0) == out0);
  CHECK(two.input_grad(0) == dx0);
  two.backward_weight(0);
  for (int b = 0; b < 2; ++b) {
    CHECK(relative_difference(two.weight1_grad(b), one.weight1_grad(b)) < 1e-6);
    CHECK(relative_difference(two.weight2_grad(b), one.weight2_grad(b)) < 1e-6);
  }
  CHECK_THROWS_WITH(two.forward(2), Catch::Contains("slot 2 out of range (slots=2)"));
  CHECK_THROWS(calibrate::StageMlp(shape, 1, false, 0));
}

TEST_CASE("StageModel gives each micro-batch a slot from F to W and refuses a B before its F",
          "[exec]") {
  const ModelShape ms{8, 4, 1};
  StageModel m(ms, stage_seed(1, 0), 2);
  const auto x = microbatch_input(1, 0, ms);
  m.forward(0, x);
  m.forward(1, x);
  CHECK_THROWS_WITH(m.forward(2, x), Catch::Contains("all 2 activation slots are in use"));
  CHECK(m.output(0) == m.output(1));
  (void)m.backward_fused(1, microbatch_label(1, 1, ms));
  m.forward(2, x);  // the BW freed a slot
  CHECK_THROWS_WITH(m.backward_input(5, x), Catch::Contains("micro-batch 5: its F has not run"));
}

TEST_CASE("data is the same for the same seed and micro-batch, and the MSE gradient is "
          "2 (o - label) / numel",
          "[exec]") {
  const ModelShape ms{4, 2, 1};
  CHECK(microbatch_input(7, 3, ms) == microbatch_input(7, 3, ms));
  CHECK(microbatch_input(7, 3, ms) != microbatch_input(7, 4, ms));
  CHECK(microbatch_input(7, 3, ms) != microbatch_label(7, 3, ms));
  CHECK(stage_seed(1, 0) != stage_seed(1, 1));
  const std::vector<float> o{1, 2, 3, 4}, l{0, 2, 5, 4};
  CHECK(mse_grad(o, l) == std::vector<float>{0.5f, 0.0f, -1.0f, 0.0f});
}

TEST_CASE("relative_difference is max |a - b| over max |b|", "[exec]") {
  const std::vector<float> b{1, -4, 2}, a{1, -4.5f, 2};
  CHECK(relative_difference(b, b) == 0.0);
  CHECK(relative_difference(a, b) == Approx(0.125));
  CHECK(std::isinf(relative_difference(a, std::vector<float>{1, 2})));
  CHECK(relative_difference(std::vector<float>{0}, std::vector<float>{0}) == 0.0);
}

TEST_CASE("the reference gradients are those of each micro-batch's forward and full backward, "
          "summed",
          "[exec]") {
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 2});
  const ModelShape ms{8, 4, 2};
  const auto ref = reference_gradients(s, ms, 1);
  REQUIRE(ref.size() == 2);
  // By hand: one StageModel per stage, micro-batch 1 first (sums commute up to rounding).
  StageModel s0(ms, stage_seed(1, 0), 1), s1(ms, stage_seed(1, 1), 1);
  for (int mb : {1, 0}) {
    s0.forward(mb, microbatch_input(1, mb, ms));
    s1.forward(mb, s0.output(mb));
    const auto g = s1.backward_fused(mb, mse_grad(s1.output(mb), microbatch_label(1, mb, ms)));
    s0.backward_input(mb, g);
    s0.backward_weight(mb);
  }
  CHECK(relative_difference(s0.weight_grads(), ref[0]) < 1e-6);
  CHECK(relative_difference(s1.weight_grads(), ref[1]) < 1e-6);
  CHECK(ref[0].size() == 2u * 2u * 4u * 8u * 8u);
  // Not all zero, and not the same for the two stages.
  CHECK(relative_difference(ref[0], ref[1]) > 1e-3);
}

TEST_CASE("calibration can rotate over activation slots, as a pipeline runs its micro-batches",
          "[exec][calibrate]") {
  calibrate::CalibrationOptions o;
  o.dim = 16;
  o.tokens = 8;
  o.blocks_per_stage = {2};
  o.repeats = 3;
  o.slots = 4;
  const auto r = calibrate::run_calibration(o);
  REQUIRE(r.measurements.size() == 1);
  CHECK(r.measurements[0].F.samples == 12);
  CHECK(r.measurements[0].BW.samples == 12);
  CHECK(r.stages[0].F_ms > 0);
  o.slots = 0;
  CHECK_THROWS_WITH(calibrate::validate_options(o), Catch::Contains("slots=0 is out of range"));
}
