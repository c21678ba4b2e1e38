// Tests of sequence slices on the command line (--slices, --slicing, --attn-share, --seq): what
// the report and the JSON say, and the exit code of every bad value.
#include "tests/cli/cli_harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using ppsim::test::run_ppsim;

namespace {

std::vector<std::string> sliced_tiny(const std::vector<std::string>& extra) {
  return ppsim::test::args_with(
      {"simulate", "-s", "seq1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=1,W=1"}, extra);
}

} // namespace

TEST_CASE("seq1f1b on the command line: the slices in the report, micro-batches counted whole",
          "[cli][seq1f1b]") {
  // 16 slices of half a micro-batch: F 0.5, BW 1 ms, (16 + 3) x 1.5 ms; 1F1B takes (8 + 3) x 3
  const auto r = run_ppsim(sliced_tiny({"--slices", "2", "--json"}));
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("makespan_ms") == 28.5);
  CHECK(j.at("microbatches") == 8);
  CHECK(j.at("slices") == 2);
  CHECK(j.at("peak_memory") == 2.5);
  const auto whole = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs",
                                "F=1,B=1,W=1", "--json"});
  REQUIRE(whole.code == 0);
  CHECK(nlohmann::json::parse(whole.out).at("makespan_ms") == 33.0);
  CHECK(nlohmann::json::parse(whole.out).at("peak_memory") == 4.0);
  // one slice is 1F1B exactly, and says nothing of slices
  const auto one = run_ppsim(sliced_tiny({"--slices", "1", "--json"}));
  REQUIRE(one.code == 0);
  CHECK(nlohmann::json::parse(one.out).at("makespan_ms") == 33.0);
  CHECK_FALSE(nlohmann::json::parse(one.out).contains("slices"));
  const auto t = run_ppsim(sliced_tiny({"--slices", "2", "--slicing", "3,1"}));
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Catch::Contains("slices        2 per micro-batch (lengths 0.75, 0.25)"));
  CHECK_THAT(t.out, Catch::Contains("microbatches  8\n"));
}

TEST_CASE("bad slices on the command line are refused with their exit code", "[cli][seq1f1b][robust]") {
  struct Case {
    std::vector<std::string> extra;
    int code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--slices", "65"}, 2, "not in range"},
      {{"--slices", "0"}, 2, "not in range"},
      {{"--slices", "2", "--slicing", "1,2,3"}, 3, "gives 3 lengths for --slices 2"},
      {{"--slices", "2", "--slicing", "bogus"}, 3, "is not a length"},
      {{"--slices", "2", "--attn-share", "1"}, 3, "must be in [0, 1)"},
      {{"--slices", "2", "--seq", "4096"}, 3, "--seq needs --model"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.extra);
    const auto r = run_ppsim(sliced_tiny(c.extra));
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Catch::Contains(c.says));
  }
  const auto other = run_ppsim({"simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--costs",
                                "F=1,B=1,W=1", "--slices", "2"});
  CHECK(other.code == 3);
  CHECK_THAT(other.err, Catch::Contains("for seq1f1b, seq-zb-h1 and interleaved-seq1f1b only"));
  const auto seq = run_ppsim({"simulate", "-s", "seq1f1b", "-p", "4", "-m", "8", "--model",
                              "llama3-8b", "--device", "h100", "--seq", "99999999"});
  CHECK(seq.code == 3);
  CHECK_THAT(seq.err, Catch::Contains("out of range"));
}

TEST_CASE("sweep takes --slices like simulate: the same figures point by point", "[cli][seq1f1b][sweep]") {
  const auto r = run_ppsim({"sweep", "-s", "seq1f1b,seq-zb-h1,interleaved-seq1f1b", "-p", "4",
                            "-m", "8", "--slices", "2", "--costs", "F=2,B=2,W=2", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::vector<double> known = {57, 51, 52.5};  // data/baselines/known-answers.json
  REQUIRE(j.at("points").size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& pt = j.at("points")[i];
    CAPTURE(pt.dump());
    CHECK(pt.at("cost_ms") == known[i]);
    CHECK(pt.at("m") == 8);
  }
  // and a schedule without slices is a rejected point with the reason, as in compare
  const auto mixed = run_ppsim({"sweep", "-s", "1f1b", "-p", "4", "-m", "8", "--slices", "2",
                                "--costs", "F=2,B=2,W=2"});
  CHECK_THAT(mixed.out + mixed.err, Catch::Contains("are for seq1f1b, seq-zb-h1 and interleaved-seq1f1b only"));
  CHECK(run_ppsim({"sweep", "-s", "seq1f1b", "-p", "4", "-m", "8", "--slices", "65"}).code == 2);
}

TEST_CASE("validate counts a sliced file's micro-batches whole", "[cli][seq1f1b]") {
  ppsim::test::TempDir dir("slices-validate");
  const std::string file = dir / "is.json";
  REQUIRE(run_ppsim({"export", "-s", "interleaved-seq1f1b", "--slices", "2", "-p", "4", "-m", "4",
                     "--format", "json", "-o", file}).code == 0);
  const auto r = run_ppsim({"validate", file});
  CHECK(r.code == 0);
  CHECK(r.out == file + ": valid: 128 tasks on 4 devices, 8 stages, 4 micro-batches of 2 slices\n");
}
