// Tests of gpipe, 1f1b, zb-h1 and zb-h2: properties, published orders and closed forms.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <sstream>

using namespace ppsim;
using namespace ppsim::test;

namespace {

std::string order_text(const Schedule& s, int device) {
  std::string out;
  for (const Task& t : s.order[static_cast<std::size_t>(device)]) {
    if (!out.empty()) out += ' ';
    // PyTorch's notation: our fused BW is its B; stage omitted as in DESIGN.md's table.
    out += (t.kind == Kind::BW ? "B" : std::string(kind_name(t.kind))) + std::to_string(t.microbatch);
  }
  return out;
}

Metrics metrics_of(const char* name, int p, int m, const char* costs) {
  return run_schedule(make_schedule(name, {.devices = p, .microbatches = m}), parse_costs(costs)).metrics;
}

} // namespace

TEST_CASE("1f1b reproduces the PyTorch/Megatron order at p = 4, m = 8", "[schedules]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  CHECK(order_text(s, 0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(order_text(s, 1) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  CHECK(order_text(s, 2) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  CHECK(order_text(s, 3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

TEST_CASE("the toy case: F = B = W = 2, p = 4, m = 8 costs 66 / 54 / 48", "[schedules]") {
  const char* costs = "F=2,B=2,W=2,comm=0";
  CHECK(metrics_of("1f1b", 4, 8, costs).cost == 66 * ms);
  CHECK(metrics_of("zb-h1", 4, 8, costs).cost == 54 * ms);
  CHECK(metrics_of("zb-h2", 4, 8, costs).cost == 48 * ms);
  CHECK(metrics_of("zb-h2", 4, 8, costs).ideal == 48 * ms);
}

TEST_CASE("bubbles match the closed forms of the zero-bubble paper's Table 2", "[schedules]") {
  struct Case {
    double F, B, W;
  };
  // The handcrafted schedules' closed forms hold when F, B and W are comparable (the paper
  // assumes T_F ~ T_B ~ T_W); the cases stay in that regime.
  const Case cases[] = {{1, 1, 1}, {2, 2, 2}, {1, 2, 1}, {3, 2, 1}, {1.5, 2, 1}, {2, 3, 1.5}};
  const int p = GENERATE(2, 3, 4, 6, 8);
  const int m = GENERATE(16, 24);
  for (const Case& c : cases) {
    const auto text = "F=" + std::to_string(c.F) + ",B=" + std::to_string(c.B) + ",W=" + std::to_string(c.W);
    CAPTURE(text, p, m);
    const Ticks F = static_cast<Ticks>(c.F * 1e6), B = static_cast<Ticks>(c.B * 1e6),
                W = static_cast<Ticks>(c.W * 1e6);
    const Ticks ideal = m * (F + B + W);
    const Metrics a = metrics_of("1f1b", p, m, text.c_str());
    const Metrics h1 = metrics_of("zb-h1", p, m, text.c_str());
    const Metrics h2 = metrics_of("zb-h2", p, m, text.c_str());
    CHECK(a.ideal == ideal);
    CHECK(a.cost - ideal == (p - 1) * (F + B + W));
    CHECK(h1.cost - ideal == (p - 1) * (F + B - W));
    CHECK(h2.cost - ideal == std::max<Ticks>(0, (p - 1) * (F + B - 2 * W)));
  }
}

TEST_CASE("ZB-H2 with communication pays (p-1)(F+B+2comm-2W)", "[schedules]") {
  const int p = GENERATE(2, 4, 6);
  const double comm = GENERATE(0.25, 0.5);
  const auto text = "F=2,B=2,W=2,comm=" + std::to_string(comm);
  CAPTURE(p, comm);
  const Metrics h2 = metrics_of("zb-h2", p, 3 * p, text.c_str());
  const Ticks c = static_cast<Ticks>(comm * 1e6);
  CHECK(h2.cost - h2.ideal == (p - 1) * (2 * ms + 2 * ms + 2 * c - 2 * 2 * ms));
}

TEST_CASE("peak activation memory: p M_B for 1F1B, the ZB-H1 staircase, (2p-1) M_B for ZB-H2",
          "[schedules]") {
  const int p = GENERATE(2, 4, 8);
  const double mw = GENERATE(0.25, 0.5);
  CAPTURE(p, mw);
  const auto text = "F=1,B=1,W=1,MW=" + std::to_string(mw);
  const Metrics a = metrics_of("1f1b", p, 4 * p, text.c_str());
  const Metrics h1 = metrics_of("zb-h1", p, 4 * p, text.c_str());
  const Metrics h2 = metrics_of("zb-h2", p, 4 * p, text.c_str());
  CHECK(a.peak_memory == Approx(p));
  CHECK(h1.peak_memory == Approx(p));
  CHECK(h2.peak_memory == Approx(2 * p - 1));
  for (int i = 1; i <= p; ++i) {  // ZB-H1 on stage i (1-indexed): (p-i+1) M_B + (i-1) M_W
    CHECK(h1.per_device[static_cast<std::size_t>(i - 1)].peak_memory ==
          Approx((p - i + 1) + (i - 1) * mw));
    CHECK(a.per_device[static_cast<std::size_t>(i - 1)].peak_memory == Approx(p - i + 1));
  }
}

TEST_CASE("schedule preconditions name the values", "[schedules]") {
  CHECK_THROWS_WITH(make_schedule("zb-h2", {.devices = 4, .microbatches = 5}),
                    "zb-h2: needs microbatches >= 2*devices (got microbatches=5, devices=4)");
  CHECK_THROWS_WITH(make_schedule("1f1b", {.devices = 0, .microbatches = 5}),
                    "1f1b: needs devices >= 1 (got devices=0)");
  CHECK_THROWS_WITH(make_schedule("gpipe", {.devices = 2, .microbatches = -1}),
                    "gpipe: needs microbatches >= 1 (got microbatches=-1)");
  CHECK_THROWS_WITH(make_schedule("1f1b", {.devices = 2, .microbatches = 4, .chunks = 2}),
                    Catch::Contains("chunks=1 only (got chunks=2)"));
  CHECK_THROWS_WITH(make_schedule("nope", {.devices = 2, .microbatches = 4}),
                    Catch::Contains("unknown schedule 'nope' (valid: ") && Catch::Contains("1f1b") &&
                        Catch::Contains("zb-h2"));
}

TEST_CASE("the handcrafted schedules give every device one device-stage of work per micro-batch",
          "[schedules]") {
  auto name = GENERATE(as<std::string>{}, "gpipe", "1f1b", "zb-h1", "zb-h2");
  const int p = GENERATE(1, 2, 4, 8);
  const int m = GENERATE(16, 24);
  CAPTURE(name, p, m);
  const Run r = run_schedule(make_schedule(name, {.devices = p, .microbatches = m}),
                             parse_costs("F=1,B=1.3,W=0.6,comm=0.05"));
  CHECK(r.schedule.chunks() == 1);
  CHECK(r.metrics.ideal == m * 2'900'000);  // F + B + W, or F + BW
}
