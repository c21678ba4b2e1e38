// Tests of the communication plan of `ppsim execute` (MPI-free).
#include "exec/plan.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace ppsim;
using namespace ppsim::exec;

namespace {

} // namespace

TEST_CASE("1F1B's middle device receives every activation from before and every gradient from "
          "after, and holds p - d micro-batches",
          "[exec]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const ExecPlan plan = make_plan(s);
  REQUIRE(plan.devices.size() == 4);
  const DevicePlan& d1 = plan.devices[1];
  REQUIRE(d1.incoming.size() == 16);
  int from_before = 0, from_after = 0;
  for (const Message& m : d1.incoming) {
    CHECK(m.to == 1);
    if (m.part.kind == Kind::F) {
      CHECK(m.from == 0);
      CHECK(m.part.stage == 0);
      ++from_before;
    } else {
      CHECK(m.part.kind == Kind::B);
      CHECK(m.from == 2);
      CHECK(m.part.stage == 2);
      ++from_after;
    }
  }
  CHECK(from_before == 8);
  CHECK(from_after == 8);
  for (int d = 0; d < 4; ++d) CHECK(plan.devices[ix(d)].slots[ix(d)] == 4 - d);
  // The first device receives no activation, the last no gradient.
  for (const Message& m : plan.devices[0].incoming) CHECK(m.part.kind == Kind::B);
  for (const Message& m : plan.devices[3].incoming) CHECK(m.part.kind == Kind::F);
}

TEST_CASE("a V placement hands the turn of the V over in memory, not through MPI", "[exec]") {
  const Schedule s = make_schedule("zb-v", {.devices = 4, .microbatches = 8});
  const ExecPlan plan = make_plan(s);
  // Stages 3 and 4 are both on device 3: F(3) -> F(4) and B(4) -> B(3) stay on it.
  int local = 0;
  for (const TaskPlan& t : plan.devices[3].tasks)
    for (const Message& m : t.sends)
      if (m.to == 3) {
        CHECK(m.from == 3);
        CHECK(((m.part.kind == Kind::F && m.part.stage == 3) ||
               (m.part.kind == Kind::B && m.part.stage == 4)));
        ++local;
      }
  CHECK(local == 16);
  for (const Message& m : plan.devices[3].incoming) CHECK(m.from != 3);
}

TEST_CASE("every schedule's plan sends each needed result exactly once, from its producer",
          "[exec][property]") {
  const auto name = GENERATE(as<std::string>{}, "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b",
                             "zb-v", "v-half", "v-min", "dualpipe", "dualpipe-v", "zb-1p");
  const int p = GENERATE(2, 4);
  CAPTURE(name, p);
  const Schedule s = make_schedule(name, {.devices = p, .microbatches = 2 * p});
  const Topology topo(s);
  const ExecPlan plan = make_plan(s);
  std::multiset<std::size_t> sent, received;
  std::set<int> tags;
  for (int d = 0; d < s.devices; ++d) {
    const DevicePlan& dev = plan.devices[ix(d)];
    REQUIRE(dev.tasks.size() == s.order[ix(d)].size());
    for (std::size_t i = 0; i < dev.tasks.size(); ++i) {
      for (const Message& m : dev.tasks[i].sends) {
        CHECK(m.from == d);
        // The task that sends a part produced it.
        bool produced = false;
        for_each_product(s.order[ix(d)][i], [&](const Part& q) {
          produced = produced || (q.kind == m.part.kind && q.stage == m.part.stage &&
                                  q.microbatch == m.part.microbatch);
        });
        CHECK(produced);
        CHECK(topo.device_of(m.part.stage) == d);
        sent.insert(part_index(m.part, s.stages()) * 64 + ix(m.to));
      }
      for (const Message& m : dev.tasks[i].receives) {
        CHECK(m.to == d);
        received.insert(part_index(m.part, s.stages()) * 64 + ix(m.to));
      }
    }
    for (const Message& m : dev.incoming) {
      CHECK(m.from != d);
      CHECK(tags.insert(message_tag(m.part, s.stages()) * 64 + m.to).second);
    }
    // Each device holds at least one micro-batch on each of its stages, none on others'.
    for (int st = 0; st < s.stages(); ++st)
      CHECK((dev.slots[ix(st)] > 0) == (topo.device_of(st) == d));
  }
  CHECK(sent == received);
  // Every micro-batch hands F and B across each edge of its route but the ends: 2 (K - 1).
  std::size_t edges = 0;
  for (int mb = 0; mb < s.microbatches; ++mb)
    edges += 2 * (s.routes[ix(topo.route_of(mb))].size() - 1);
  CHECK(sent.size() == edges);
}
