// Tests of dualpipe and dualpipe-v: properties, the reference's phases, README bubble and memory.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <string>

using namespace ppsim;
using namespace ppsim::test;

namespace {

Run run_named(const std::string& name, int p, int m, const std::string& costs) {
  return run_schedule(make_schedule(name, {.devices = p, .microbatches = m}), parse_costs(costs));
}

std::string row(const Schedule& s, int device) {
  std::string out;
  for (const Task& t : s.order[static_cast<std::size_t>(device)]) {
    if (!out.empty()) out += ' ';
    out += to_string(t);
  }
  return out;
}

Ticks max_idle(const Metrics& m) {
  Ticks most = 0;
  for (const auto& d : m.per_device) most = std::max(most, d.idle);
  return most;
}

} // namespace

TEST_CASE("dualpipe places two replicas in opposite directions with half the micro-batches each",
          "[schedules][dualpipe]") {
  const Schedule s = make_schedule("dualpipe", {.devices = 4, .microbatches = 8});
  CHECK(s.stage_device == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  CHECK(s.routes == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(s.microbatch_route == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(s.chunks() == 1);
  // per device-stage costs reach the stages undivided
  const Run r = run_schedule(s, parse_costs("F=2,B=2,W=2,comm=0"));
  for (const auto& c : r.costs.stage) CHECK(c.F == 2 * ms);
}

TEST_CASE("dualpipe follows the eight steps of the reference implementation",
          "[schedules][dualpipe]") {
  // Derived by hand from deepseek-ai/DualPipe's step(): p = 4 (n = 2 per direction), m = 8
  // (c = 4 per direction); device 0 has r = 0 (steps 2,1,1,1,1,1,1,1), device 1 r = 1
  // (0,2,0,2,0,2,0,2) and, being a middle device, does not overlap its first step-4 pair.
  const Schedule s = make_schedule("dualpipe", {.devices = 4, .microbatches = 8});
  CHECK(row(s, 0) == "0F0 0F1 0F2 7F4 7B4 7W4 7F5 (0F3;7BW5) (7F6;0BW0) 7BW6 (7F7;0BW1) 7BW7 "
                     "0B2 0W2 0B3 0W3");
  CHECK(row(s, 1) == "1F0 6F4 1F1 6F5 1F2 6BW4 (6F6;1BW0) (1F3;6BW5) (6F7;1BW1) 6BW6 1BW2 6B7 "
                     "1B3 6W7 1W3");
  CHECK(row(s, 2) == "5F4 2F0 5F5 2F1 5F6 2BW0 (2F2;5BW4) (5F7;2BW1) (2F3;5BW5) 2BW2 5BW6 2B3 "
                     "5B7 2W3 5W7");
  CHECK(row(s, 3) == "4F4 4F5 4F6 3F0 3B0 3W0 3F1 (4F7;3BW1) (3F2;4BW4) 3BW2 (3F3;4BW5) 3BW3 "
                     "4B6 4W6 4B7 4W7");
}

TEST_CASE("dualpipe-v rows hold 38/36/34/33 actions at p = 4, m = 10", "[schedules][dualpipe]") {
  const Schedule s = make_schedule("dualpipe-v", {.devices = 4, .microbatches = 10});
  CHECK(placement_name(s) == "vshape");
  CHECK(s.order[0].size() == 38);
  CHECK(s.order[1].size() == 36);
  CHECK(s.order[2].size() == 34);
  CHECK(s.order[3].size() == 33);
}

TEST_CASE("dualpipe-v at unit chunk costs and FB = 3 idles at most 6 and ends at 54",
          "[schedules][dualpipe]") {
  // DESIGN.md: per chunk F = B = W = 1, FB = 3 (DualPipe's convention: the F&B cell of an F
  // and a fused backward), p = 4, m = 8, comm 0. Costs are given per device-stage, so with two
  // chunks every key doubles: F = B = W = 2 and FB = 6.
  const Run r = run_named("dualpipe-v", 4, 8, "F=2,B=2,W=2,FB=6,comm=0");
  const StageCosts& chunk = r.costs.stage[0];
  CHECK(chunk.F == 1 * ms);
  CHECK(chunk.B == 1 * ms);
  CHECK(chunk.W == 1 * ms);
  CHECK(chunk.BW == 2 * ms);
  CHECK(chunk.FB == 3 * ms);
  CHECK(max_idle(r.metrics) == 6 * ms);
  CHECK(r.metrics.makespan == 54 * ms);
}

TEST_CASE("dualpipe and dualpipe-v meet the README bubble (PP/2-1)(F&B+B-3W) where it applies",
          "[schedules][dualpipe]") {
  // The README's B is the full backward (our BW = B + W) and its F&B the overlapped pair; its
  // PP counts stages of one replica: p for DualPipe, 2p for DualPipeV (with per-chunk costs).
  // Its "bubble" is the idle time of a device over the iteration: cost - ideal here (every
  // device carries the same work, so that is also the largest per-device idle).
  // It holds exactly at comm 0 when the pair is not shortened (F&B = F + B + W) and F = B >= W,
  // the proportions of the README's figure. Outside that it does not (next test).
  auto name = GENERATE(as<std::string>{}, "dualpipe", "dualpipe-v");
  const int p = GENERATE(2, 4, 6, 8);
  const int extra = GENERATE(0, 2, 6);
  // F = B >= W per chunk
  auto fw = GENERATE(std::pair{1.0, 1.0}, std::pair{1.0, 0.5}, std::pair{2.0, 1.0},
                     std::pair{2.0, 0.25}, std::pair{3.0, 3.0}, std::pair{1.5, 0.5});
  const bool v = name == "dualpipe-v";
  const double F = fw.first, B = fw.first, W = fw.second, FB = F + B + W;
  const int k = v ? 2 : 1;  // costs are given per device-stage
  const std::string costs =
      fmt::format("F={},B={},W={},FB={},comm=0", F * k, B * k, W * k, FB * k);
  const int m = 2 * p + extra;
  CAPTURE(name, p, m, costs);
  const Run r = run_named(name, p, m, costs);
  const int pp = v ? 2 * p : p;
  const double readme = (pp / 2 - 1) * (FB + (B + W) - 3 * W);
  CHECK(r.metrics.cost - r.metrics.ideal == static_cast<Ticks>(readme * ms));
  CHECK(max_idle(r.metrics) == r.metrics.cost - r.metrics.ideal);
}

TEST_CASE("dualpipe's bubble leaves the README formula when F != B or F&B overlaps",
          "[schedules][dualpipe]") {
  // What the simulator gives instead (per-chunk costs, comm 0, m = 2p), recorded so a change
  // shows. With F >= B >= W and F&B = F + B + W it is (PP/2-1)(F&B + F - 2W); with a shorter
  // F&B the pairs on the critical path shrink and the bubble falls below the formula.
  struct Case {
    const char* name;
    int p;
    double F, B, W, FB;
    double got, readme;
  };
  auto c = GENERATE(Case{"dualpipe-v", 4, 1, 1, 1, 2.5, 3.5, 4.5},
                    Case{"dualpipe-v", 4, 2, 2, 1, 4, 10, 12},
                    Case{"dualpipe-v", 4, 1, 2, 1, 4, 11, 12},
                    Case{"dualpipe-v", 4, 2, 1, 1, 4, 12, 9},
                    Case{"dualpipe-v", 4, 1, 1, 2, 4, 6, 3},
                    Case{"dualpipe", 8, 1, 1, 1, 2.5, 3.5, 4.5},
                    Case{"dualpipe", 8, 1, 2, 1, 4, 11, 12});
  const int k = std::string(c.name) == "dualpipe-v" ? 2 : 1;
  const std::string costs =
      fmt::format("F={},B={},W={},FB={},comm=0", c.F * k, c.B * k, c.W * k, c.FB * k);
  CAPTURE(c.name, c.p, costs);
  const Run r = run_named(c.name, c.p, 2 * c.p, costs);
  const int pp = k == 2 ? 2 * c.p : c.p;
  CHECK((pp / 2 - 1) * (c.FB + (c.B + c.W) - 3 * c.W) == Approx(c.readme));
  CHECK(r.metrics.cost - r.metrics.ideal == static_cast<Ticks>(c.got * ms));
}

TEST_CASE("dualpipe keeps at most PP+1 micro-batches of activations per device",
          "[schedules][dualpipe]") {
  // README: activation per device PP + 1 (PP = p stages per replica, one M_B each); DualPipeV's
  // row says the same of its 2p half-size chunks, (2p+1)/2 M_B. The peak is the F half of an
  // overlapped pair counting from its start while its backward half frees at its end.
  const int p = GENERATE(2, 4, 6, 8);
  const int extra = GENERATE(0, 4);
  auto mw = GENERATE(as<std::string>{}, "0", "0.5", "1");
  CAPTURE(p, extra, mw);
  const Run dp = run_named("dualpipe", p, 2 * p + extra, "F=1,B=1,W=1,MW=" + mw);
  for (const auto& d : dp.metrics.per_device) CHECK(d.peak_memory == Approx(p + 1));
  const Run dv = run_named("dualpipe-v", p, 2 * p + extra, "F=1,B=1,W=1,MW=" + mw);
  for (const auto& d : dv.metrics.per_device) CHECK(d.peak_memory == Approx((2 * p + 1) / 2.0));
}

TEST_CASE("dualpipe rejects shapes the reference does not run, naming the values",
          "[schedules][dualpipe]") {
  CHECK_THROWS_WITH(make_schedule("dualpipe", {.devices = 4, .microbatches = 8, .chunks = 2}),
                    Catch::StartsWith("dualpipe: supports chunks=1 only") &&
                        Catch::Contains("(got chunks=2)"));
  CHECK_THROWS_WITH(make_schedule("dualpipe-v", {.devices = 4, .microbatches = 8, .chunks = 3}),
                    Catch::StartsWith("dualpipe-v: supports chunks=2 only") &&
                        Catch::Contains("(got chunks=3)"));
  CHECK_THROWS_MATCHES(make_schedule("dualpipe", {.devices = 4, .microbatches = 9}), ConfigError,
                       Catch::Message("dualpipe: needs microbatches even and >= 2*devices (got "
                                      "microbatches=9, devices=4)"));
  // DualPipeV needs neither an even p nor an even m
  CHECK_NOTHROW(make_schedule("dualpipev", {.devices = 3, .microbatches = 7}));
}

TEST_CASE("dualpipe holds a device-stage per direction and dualpipe-v half of one per chunk",
          "[schedules][dualpipe]") {
  const int p = GENERATE(2, 4, 8);
  const Schedule two = make_schedule("dualpipe", {.devices = p, .microbatches = 2 * p});
  const Schedule v = make_schedule("dualpipe-v", {.devices = p, .microbatches = 2 * p});
  CHECK(two.chunks() == 1);
  CHECK(v.chunks() == 2);
  CHECK(placement_name(v) == "vshape");
}
