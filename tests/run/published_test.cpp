// Tests of the published runs (ppsim.published/1) and of what ppsim predicts for them: the file's
// checks, the FLOP counts, and the accuracy targets on the held-out runs of the built-in table.
#include "ppsim/run/published.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/viz/page_assets.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace ppsim;
using Catch::Matchers::Contains;
using ppsim::test::error_of;

namespace {

// One run of the 1.7B model of Narayanan et al. 2021 with `extra` fields replacing the defaults.
std::string one_run(const std::string& fields) {
  return R"({"schema": "ppsim.published/1", "flops": "narayanan2021", "runs": [{
    "name": "gpt-1.7b", "source": "paper", "use": "check",
    "model": {"schema": "ppsim.model/1", "layers": 24, "hidden": 2304, "heads": 24, "seq": 2048,
              "microbatch_size": 16, "vocab": 51200, "dtype": "fp16", "recompute": "full",
              "tied_embeddings": true, "flash_attention": false},
    "device": "a100", "schedule": "1f1b", "measured": {"tflops_per_gpu": 137})" +
         fields + "}]}";
}

} // namespace

TEST_CASE("published runs: the FLOP counts of Narayanan et al. and of MFU", "[model][published]") {
  PublishedRuns runs = parse_published_json(
      one_run(R"(, "tp": 1, "pp": 1, "gpus": 32, "global_batch": 512)"), "p.json");
  REQUIRE(runs.runs.size() == 1);
  const PublishedRun& r = runs.runs[0];
  CHECK_FALSE(r.fit);
  CHECK(r.device.name == "a100");
  CHECK_FALSE(r.model.flash_attention);
  // 96 B s l h^2 (1 + s / 6h + V / 16 l h), with the recomputed forward
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  CHECK(published_flops(runs, r) == Approx(96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))));
  runs.flops = "model";
  CHECK(published_flops(runs, r) == Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))));
  // the prediction: the paper's FLOPs over the predicted iteration, per GPU
  const Validation v = validate_published(runs);
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].dp == 32);
  CHECK(v.rows[0].microbatches == 1);
  CHECK(v.rows[0].predicted_tflops ==
        Approx(published_flops(runs, r) / (v.rows[0].iteration_ms * 1e-3) / 32 / 1e12));
  CHECK(v.rows[0].error == Approx(v.rows[0].predicted_tflops / 137 - 1));
  CHECK(v.check.count == 1);
  CHECK(v.fit.count == 0);
}

TEST_CASE("published runs: bad files are refused with the path", "[model][published]") {
  const auto bad = [](const std::string& fields) {
    return error_of<ConfigError>([&] { (void)parse_published_json(one_run(fields), "p.json"); });
  };
  CHECK_THAT(bad(R"(, "tp": 8, "pp": 1, "gpus": 12, "global_batch": 512)"),
             Contains("p.json: /runs/0/gpus: 12 GPUs are not a multiple of tp x pp = 8"));
  CHECK_THAT(bad(R"(, "tp": 1, "pp": 1, "gpus": 32, "global_batch": 500)"),
             Contains("/runs/0/global_batch: 500 is not a multiple of the micro-batch size x replicas = 16 x 32"));
  CHECK_THAT(bad(R"(, "tp": 1, "pp": 1, "gpus": 1, "global_batch": 16000000)"),
             Contains("1000000 micro-batches per replica (at most 100000)"));
  CHECK_THAT(bad(R"(, "tp": 0, "pp": 1, "gpus": 32, "global_batch": 512)"), Contains("/runs/0/tp"));
  // every run within its bounds, but all of them together too much work
  std::string many = one_run(R"(, "tp": 1, "pp": 64, "gpus": 64, "global_batch": 960000)");
  const std::string run = many.substr(many.find("[{") + 1, many.rfind("}]") - many.find("[{"));
  std::string runs;
  for (int i = 0; i < 5; ++i) runs += (i ? ", " : "") + run;  // 64 x 60000 each
  many = many.substr(0, many.find("[{") + 1) + runs + "]}";
  CHECK_THAT(error_of<ConfigError>([&] { (void)parse_published_json(many, "p.json"); }),
             Contains("p.json: /runs: 19200000 stage x micro-batch pairs over all runs (at most 16777216)"));
  CHECK_THAT(bad(R"(, "pp": 1, "gpus": 32, "global_batch": 512)"), Contains("/runs/0/tp: missing"));
  CHECK_THAT(error_of<ConfigError>([] {
               (void)parse_published_json(R"({"schema": "ppsim.published/1", "flops": "hfu", "runs": []})", "p.json");
             }),
             Contains("p.json: /flops: 'hfu': expected narayanan2021 or model"));
  CHECK_THAT(error_of<ConfigError>([] {
               (void)parse_published_json(R"({"schema": "ppsim.published/1", "flops": "model", "runs": []})", "p.json");
             }),
             Contains("/runs: 0 runs (expected 1..1000)"));
  std::string text = one_run(R"(, "tp": 1, "pp": 1, "gpus": 32, "global_batch": 512)");
  text.replace(text.find("\"1f1b\""), 6, "\"2f2b\"");
  CHECK_THAT(error_of<ConfigError>([&] { (void)parse_published_json(text, "p.json"); }),
             Contains("/runs/0/schedule: '2f2b': not a schedule"));
  text = one_run(R"(, "tp": 1, "pp": 1, "gpus": 32, "global_batch": 512)");
  text.replace(text.find("\"check\""), 7, "\"both\"");
  CHECK_THAT(error_of<ConfigError>([&] { (void)parse_published_json(text, "p.json"); }),
             Contains("/runs/0/use: 'both': expected fit or check"));
  text = one_run(R"(, "tp": 1, "pp": 1, "gpus": 32, "global_batch": 512)");
  text.replace(text.find("137"), 3, "-1");
  CHECK_THAT(error_of<ConfigError>([&] { (void)parse_published_json(text, "p.json"); }),
             Contains("/runs/0/measured/tflops_per_gpu"));
}

TEST_CASE("the built-in table: Megatron-LM's ten runs, four to fit, held-out ones within the targets", "[model][published]") {
  const PublishedRuns runs =
      parse_published_json(published_megatron_2021(), "data/published/megatron-2021.json");
  REQUIRE(runs.runs.size() == 10);
  CHECK(runs.flops == "narayanan2021");
  const Validation v = validate_published(runs);
  CHECK(v.fit.count == 4);
  CHECK(v.check.count == 6);
  // the targets of the model-level costs: 5 % on average, 10 % at worst, on runs not fitted
  CHECK(v.check.mean_abs_error < 0.05);
  CHECK(v.check.max_abs_error < 0.10);
  for (const ValidationRow& r : v.rows) {
    CAPTURE(r.run.name);
    CHECK(r.microbatches * r.dp * r.run.model.microbatch_size == r.run.global_batch);
    CHECK(r.iteration_ms > 0);
    if (r.run.pp == 1) CHECK(r.bubble_rate == 0);
  }
}
