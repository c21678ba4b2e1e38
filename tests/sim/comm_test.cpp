// Tests of the communication models: blocking sends, a link sized by bytes, duplex contention,
// and what the metrics make of them (messages, bytes, waiting on communication).
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace ppsim;

namespace {

using ppsim::test::ms;

Timeline run_with(const Schedule& s, const std::string& costs, const CommOptions& comm) {
  SimOptions o;
  o.comm = comm;
  return simulate(s, cost_model_for(parse_costs(costs), s), o);
}

CommOptions blocking() {
  CommOptions c;
  c.mode = CommMode::Blocking;
  return c;
}

CommOptions duplex() {
  CommOptions c;
  c.link.contention = Contention::Duplex;
  return c;
}

// [start, end) of every run of device d, in ms.
std::vector<std::pair<Ticks, Ticks>> times_of(const Timeline& t, int d) {
  std::vector<std::pair<Ticks, Ticks>> out;
  for (const TaskRun& r : t.device_runs(d))
    out.emplace_back(r.start / ms, r.end / ms);
  return out;
}

using Times = std::vector<std::pair<Ticks, Ticks>>;

} // namespace

TEST_CASE("blocking sends hold the sender until delivery: 1F1B p=2 m=2 costs 11 then 12",
          "[sim][comm]") {
  // F = 1, BW = 2, comm = 1. d0: F0 F1 BW0 BW1; d1: F0 BW0 F1 BW1.
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 2});
  const std::string costs = "F=1,B=1,W=1,comm=1";
  // Async: d1's F0 at 1 + 1, its BW0 result reaches d0 at 5 + 1, BW1's at 8 + 1.
  const Timeline a = run_with(s, costs, {});
  CHECK(times_of(a, 0) == Times{{0, 1}, {1, 2}, {6, 8}, {9, 11}});
  CHECK(times_of(a, 1) == Times{{2, 3}, {3, 5}, {5, 6}, {6, 8}});
  CHECK(measure(a, cost_model_for(parse_costs(costs), s)).cost == 11 * ms);
  CHECK(a.sends_done.empty());
  // Blocking: d0 waits for F0 until 2 and for F1 until 4; d1 waits for B0 until 6 (so F1
  // starts at 6, not 5) and for B1 until 10, which d0's BW1 needs: [10, 12].
  const Timeline b = run_with(s, costs, blocking());
  CHECK(times_of(b, 0) == Times{{0, 1}, {2, 3}, {6, 8}, {10, 12}});
  CHECK(times_of(b, 1) == Times{{2, 3}, {3, 5}, {6, 7}, {7, 9}});
  const Metrics mb = measure(b, cost_model_for(parse_costs(costs), s));
  CHECK(mb.cost == 12 * ms);
  // When each run's stream was free again: its end, or its message's delivery.
  REQUIRE(b.sends_done.size() == 8);
  CHECK(b.sends_done == std::vector<Ticks>{2 * ms, 4 * ms, 8 * ms, 12 * ms, // d0 (BW sends none)
                                           3 * ms, 6 * ms, 7 * ms, 10 * ms});
  // Waiting on communication, d0: [1,2) and [3,4) for its own sends, [5,6) for B0 (produced
  // at 5), [9,10) for B1; [4,5) and [8,9) it waited on compute. d1: [5,6) for its B0 send.
  CHECK(mb.per_device[0].comm_wait == 4 * ms);
  CHECK(mb.per_device[0].idle == 6 * ms);
  CHECK(mb.per_device[1].comm_wait == 1 * ms);
  const Metrics ma = measure(a, cost_model_for(parse_costs(costs), s));
  CHECK(ma.per_device[0].comm_wait == 2 * ms); // [5,6) and [8,9)
  CHECK(ma.per_device[1].comm_wait == 0);
  for (const Metrics* m : {&ma, &mb}) {
    CHECK(m->per_device[0].p2p_messages == 2); // F0, F1
    CHECK(m->per_device[1].p2p_messages == 2); // B0, B1
  }
}

TEST_CASE("duplex contention queues messages on one directed pair, first sent first served",
          "[sim][comm]") {
  // GPipe p=2 m=2, F = 1, BW = 2, comm = 3: F0 and F1 leave d0 at 1 and 2.
  const Schedule s = make_schedule("gpipe", {.devices = 2, .microbatches = 2});
  const std::string costs = "F=1,B=1,W=1,comm=3";
  const Timeline none = run_with(s, costs, {});
  CHECK(times_of(none, 1) == Times{{4, 5}, {5, 6}, {6, 8}, {8, 10}});
  CHECK(times_of(none, 0) == Times{{0, 1}, {1, 2}, {11, 13}, {13, 15}});
  // Duplex: F1 waits for the link until F0 has arrived (4), arriving at 7; B0 leaves d1 at 10
  // and arrives at 13, B1 is sent at 12 and waits until 13, arriving at 16.
  const Timeline dx = run_with(s, costs, duplex());
  CHECK(times_of(dx, 1) == Times{{4, 5}, {7, 8}, {8, 10}, {10, 12}});
  CHECK(times_of(dx, 0) == Times{{0, 1}, {1, 2}, {13, 15}, {16, 18}});
  REQUIRE(dx.comms.size() == 4);
  const auto find = [&](Kind kind, int mb) -> const CommEvent& {
    for (const CommEvent& c : dx.comms)
      if (c.part.kind == kind && c.part.microbatch == mb)
        return c;
    FAIL("no message");
    return dx.comms.front();
  };
  const CommEvent& f1 = find(Kind::F, 1);
  CHECK(f1.send == 2 * ms);
  CHECK(f1.start == 4 * ms); // queued 2 ms behind F0
  CHECK(f1.arrive == 7 * ms);
  const CommEvent& b1 = find(Kind::B, 1);
  CHECK(b1.send == 12 * ms);
  CHECK(b1.start == 13 * ms);
  CHECK(b1.arrive == 16 * ms);
  CHECK(find(Kind::F, 0).start == find(Kind::F, 0).send);
  CHECK(measure(none, cost_model_for(parse_costs(costs), s)).cost == 15 * ms);
  CHECK(measure(dx, cost_model_for(parse_costs(costs), s)).cost == 18 * ms);
}

TEST_CASE("duplex links carry the two directions of a pair independently", "[sim][comm]") {
  // Two routes in opposite directions: micro-batch 0 goes 0 -> 1 (devices 0 -> 1), micro-batch
  // 1 goes 2 -> 3 (devices 1 -> 0). Both F messages leave at 1 and both B messages at 7, one
  // each way: nothing queues (a shared half-duplex link would delay one of each pair by 3).
  Schedule s = make_pipeline("opposite", 2, 2, {0, 1, 1, 0});
  s.routes = {{0, 1}, {2, 3}};
  s.microbatch_route = {0, 1};
  s.order[0] = {Task::make(Kind::F, 0, 0), Task::make(Kind::F, 3, 1), Task::make(Kind::BW, 3, 1),
                Task::make(Kind::BW, 0, 0)};
  s.order[1] = {Task::make(Kind::F, 2, 1), Task::make(Kind::F, 1, 0), Task::make(Kind::BW, 1, 0),
                Task::make(Kind::BW, 2, 1)};
  const std::string costs = "F=1,B=1,W=1,comm=3";
  const Timeline none = run_with(s, costs, {});
  const Timeline dx = run_with(s, costs, duplex());
  for (const Timeline* t : {&none, &dx}) {
    CHECK(times_of(*t, 0) == Times{{0, 1}, {4, 5}, {5, 7}, {10, 12}});
    CHECK(times_of(*t, 1) == Times{{0, 1}, {4, 5}, {5, 7}, {10, 12}});
    REQUIRE(t->comms.size() == 4);
    for (const CommEvent& c : t->comms)
      CHECK(c.start == c.send);
  }
}

TEST_CASE("a sized link takes latency + bytes / bandwidth per message", "[sim][comm]") {
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 1});
  const CostModel c =
      cost_model_for(parse_costs("F=1,B=1,W=1,comm=5,act_bytes=1e6,grad_bytes=2.5e5"), s);
  LinkModel link;
  link.sized = true;
  link.latency = 10'000; // 0.01 ms
  link.bandwidth = 12;   // GB/s = bytes per ns
  const MessageCosts m = message_costs(c, link);
  CHECK(m.time(Kind::F, 0) == 10'000 + 83'333); // 1e6 / 12 = 83333.3 ns
  CHECK(m.time(Kind::B, 1) == 10'000 + 20'833); // 2.5e5 / 12 = 20833.3 ns
  CHECK(m.bytes(Kind::F, 0) == 1e6);
  CHECK(m.bytes(Kind::B, 1) == 2.5e5);
  // Unsized: the plain per-edge comm, whatever the bytes; unlimited bandwidth: the latency.
  CHECK(message_costs(c, LinkModel{}).time(Kind::F, 0) == 5 * ms);
  LinkModel latency_only;
  latency_only.sized = true;
  latency_only.latency = 7;
  CHECK(message_costs(c, latency_only).time(Kind::B, 1) == 7);
  // In the engine: F0 leaves d0 at 1 ms and arrives 93333 ns later.
  CommOptions o;
  o.link = link;
  SimOptions so;
  so.comm = o;
  const Timeline t = simulate(s, c, so);
  CHECK(t.device_runs(1)[0].start == 1 * ms + 93'333);
  REQUIRE(t.comms.size() == 2);
  CHECK(t.comms[0].bytes == 1e6);
  CHECK(t.comms[1].bytes == 2.5e5);
  const Metrics mt = measure(t, c);
  CHECK(mt.per_device[0].p2p_bytes_sent == 1e6);
  CHECK(mt.per_device[1].p2p_bytes_sent == 2.5e5);
}

TEST_CASE("blocking is never faster than async, contention never faster than none",
          "[sim][comm][property]") {
  const std::string costs = "F=1,B=1.5,W=0.7,comm=0.3,act_bytes=4e6,grad_bytes=4e6";
  CommOptions sized;
  sized.link.sized = true;
  sized.link.latency = 50'000;
  sized.link.bandwidth = 20;
  for (const ScheduleInfo& info : schedule_registry()) {
    for (const auto& [p, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{3, 12}}) {
      const ScheduleSpec spec{.devices = p, .microbatches = m};
      if (!rejection(info, spec).empty())
        continue;
      CAPTURE(info.name, p, m);
      const Schedule s = make_schedule(info.name, spec);
      const CostModel c = cost_model_for(parse_costs(costs), s);
      for (const CommOptions& base : {CommOptions{}, sized}) {
        CommOptions blk = base, dx = base;
        blk.mode = CommMode::Blocking;
        dx.link.contention = Contention::Duplex;
        CommOptions both = blk;
        both.link.contention = Contention::Duplex;
        const Timeline t0 = run_with(s, costs, base);
        const Ticks cost0 = measure(t0, c).cost;
        for (const CommOptions* o : {&blk, &dx, &both}) {
          const Timeline t = run_with(s, costs, *o);
          for (std::size_t r = 0; r < t.runs.size(); ++r)
            CHECK(t.runs[r].start >= t0.runs[r].start);
          CHECK(measure(t, c).cost >= cost0);
        }
      }
    }
  }
}

TEST_CASE("the default communication options are exactly the plain simulation", "[sim][comm]") {
  for (const char* name : {"zb-h1", "dualpipe-v", "interleaved-1f1b"}) {
    CAPTURE(name);
    const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
    const CostModel c = cost_model_for(parse_costs("F=1,B=1.5,W=0.7,comm=0.25"), s);
    const Timeline a = simulate(s, c);
    const Timeline b = simulate(s, c, SimOptions{});
    REQUIRE(a.runs.size() == b.runs.size());
    for (std::size_t r = 0; r < a.runs.size(); ++r) {
      CHECK(a.runs[r].start == b.runs[r].start);
      CHECK(a.runs[r].end == b.runs[r].end);
    }
    REQUIRE(a.comms.size() == b.comms.size());
    for (std::size_t k = 0; k < a.comms.size(); ++k) {
      CHECK(a.comms[k].start == a.comms[k].send);
      CHECK(a.comms[k].arrive == a.comms[k].send + c.comm);
      CHECK(b.comms[k].from == a.comms[k].from);
      CHECK(b.comms[k].arrive == a.comms[k].arrive);
    }
  }
}

TEST_CASE("communication waits are idle, inside the span, and add up per device", "[sim][comm]") {
  const Schedule s = make_schedule("zb-h2", {.devices = 4, .microbatches = 8});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.4"), s);
  for (const CommOptions& o : {CommOptions{}, blocking(), duplex()}) {
    SimOptions so;
    so.comm = o;
    const Timeline t = simulate(s, c, so);
    const Metrics m = measure(t, c);
    std::vector<Ticks> sum(4, 0);
    for_each_comm_wait(t, [&](const CommWait& w) {
      CHECK(w.end > w.begin);
      const auto runs = t.device_runs(w.device);
      const auto i =
          static_cast<std::size_t>(w.run - t.device_begin[static_cast<std::size_t>(w.device)]);
      REQUIRE(i > 0);
      CHECK(w.begin >= runs[i - 1].end); // inside the idle gap before run `run`
      CHECK(w.end <= runs[i].start);
      sum[static_cast<std::size_t>(w.device)] += w.end - w.begin;
    });
    for (int d = 0; d < 4; ++d) {
      CHECK(m.per_device[static_cast<std::size_t>(d)].comm_wait ==
            sum[static_cast<std::size_t>(d)]);
      CHECK(m.per_device[static_cast<std::size_t>(d)].comm_wait <=
            m.per_device[static_cast<std::size_t>(d)].idle);
    }
  }
}

TEST_CASE("bad communication options are named", "[sim][comm]") {
  CommOptions o;
  o.link.bandwidth = -2;
  CHECK_THROWS_AS(check_comm_options(o), ConfigError);
  const Schedule s = make_schedule("1f1b", {.devices = 2, .microbatches = 2});
  SimOptions so;
  so.comm = o;
  CHECK_THROWS_AS(simulate(s, cost_model_for(parse_costs("F=1"), s), so), ConfigError);
}
