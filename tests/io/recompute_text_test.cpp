// Tests of the --recompute parser.
#include "ppsim/io/recompute_text.hpp"
#include "ppsim/sim/errors.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

TEST_CASE("recompute: --recompute reads one choice, a layer count, auto, or one choice per stage", "[io][recompute]") {
  CHECK_FALSE(parse_recompute("").given());
  const RecomputeSpec full = parse_recompute("full");
  CHECK(full.uniform());
  CHECK(full.stages == std::vector<StageRecompute>{{Recompute::full, -1, Recompute::none}});
  const RecomputeSpec block = parse_recompute("full:3");
  CHECK_FALSE(block.uniform());
  CHECK(block.stages == std::vector<StageRecompute>{{Recompute::full, 3, Recompute::none}});
  CHECK(parse_recompute("full:2+selective").stages.front().rest == Recompute::selective);
  const RecomputeSpec a = parse_recompute(" auto ");
  CHECK(a.automatic);
  CHECK(a.given());
  const RecomputeSpec list = parse_recompute("selective, none,full:0,full");
  REQUIRE(list.stages.size() == 4);
  CHECK(list.stages[0].mode == Recompute::selective);
  CHECK(list.stages[2] == StageRecompute{Recompute::full, 0, Recompute::none});
  // the text form reads back, and equal entries collapse to one
  CHECK(recompute_text(list.stages) == "selective,none,full:0,full");
  CHECK(parse_recompute(recompute_text(list.stages)).stages == list.stages);
  CHECK(recompute_text(parse_recompute("full:2+selective,full:2+selective").stages) ==
        "full:2+selective");
}

TEST_CASE("a bad --recompute names the entry and what is wrong", "[io][recompute][bad-input]") {
  const auto bad = [](const char* text) { return message_of<ConfigError>([&] { (void)parse_recompute(text); }); };
  CHECK_THAT(bad("some"), Contains("--recompute 'some': unknown choice"));
  CHECK_THAT(bad("selective:2"), Contains("only full takes a layer count"));
  CHECK_THAT(bad("full:x"), Contains("expected an integer"));
  CHECK_THAT(bad("full:-1"), Contains("out of range"));
  CHECK_THAT(bad("full:5000"), Contains("out of range"));
  CHECK_THAT(bad("full:2+full"), Contains("the other layers are none or selective"));
  CHECK_THAT(bad("none,auto"), Contains("auto is for the whole model"));
  CHECK_THAT(bad("none,,full"), Contains("an empty entry"));
  // bounded: a list longer than any layout is refused before it is held
  std::string huge;
  for (int i = 0; i < 300000; ++i) huge += "none,";
  huge += "none";
  CHECK_THAT(bad(huge.c_str()), Contains("more than") && Contains("entries"));
}
