// Tests of overlapped cells: two chains of sub-operations on one compute stream and comm
// streams (the known answers of hidden and exposed all-to-alls, one comm stream), the Combined
// 1F1B rewrite of an order, and cells in a DualPipe run.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/overlap.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/task_graph.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/test_helpers.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <vector>

using namespace ppsim;
using ppsim::test::ms;

namespace {

TimedOp compute(double t) { return {static_cast<Ticks>(t * ms), false}; }
TimedOp comm(double t) { return {static_cast<Ticks>(t * ms), true}; }

std::string row(const Schedule& s, int device) {
  std::string out;
  for (const Task& t : s.order[static_cast<std::size_t>(device)]) {
    if (!out.empty()) out += ' ';
    out += to_string(t);
  }
  return out;
}

} // namespace

TEST_CASE("an all-to-all as long as the other micro-batch's compute is hidden; longer, exposed by the difference",
          "[sim][overlap]") {
  // F: attention 2, dispatch a, experts 2. The other micro-batch's 2 of compute runs while the
  // dispatch does.
  const std::vector<TimedOp> other = {compute(2)};
  const std::vector<TimedOp> hidden = {compute(2), comm(2), compute(2)};
  CHECK(overlapped_cell(hidden, other, 0) == 6 * ms);  // the compute alone
  const std::vector<TimedOp> exposed = {compute(2), comm(4), compute(2)};
  CHECK(overlapped_cell(exposed, other, 0) == 8 * ms);  // 6 + (4 - 2)
  // Alone, a chain takes its sum; two chains of compute only, the sum of both.
  CHECK(overlapped_cell(exposed, {}, 0) == 8 * ms);
  CHECK(overlapped_cell(other, other, 0) == 4 * ms);
}

TEST_CASE("with one comm stream two overlapping collectives serialise", "[sim][overlap]") {
  const std::vector<TimedOp> a = {comm(2), compute(1)};
  const std::vector<TimedOp> b = {comm(2), compute(1)};
  CHECK(overlapped_cell(a, b, 0) == 4 * ms);  // both at once, then 1 + 1 of compute
  CHECK(overlapped_cell(a, b, 2) == 4 * ms);
  CHECK(overlapped_cell(a, b, 1) == 5 * ms);  // 2 + 2 in turn, the last compute after
}

TEST_CASE("a cell's ties go to the operation ready first, then the first chain", "[sim][overlap]") {
  // Both chains start with compute: the first's runs first, so its comm overlaps the second's.
  const std::vector<TimedOp> f = {compute(1), comm(3), compute(1)};
  const std::vector<TimedOp> b = {compute(3), comm(1), compute(1)};
  // 0-1 f compute; 1-4 f's comm under b's compute; 4-5 f compute and b's comm; 5-6 b compute.
  CHECK(overlapped_cell(f, b, 0) == 6 * ms);
  // b first: 0-3 b compute, 3-4 f compute (ready since 0) and b's comm, 4-5 b compute and
  // f's comm 4-7, 7-8 f compute: nothing hides f's long comm.
  CHECK(overlapped_cell(b, f, 0) == 8 * ms);
}

TEST_CASE("a cell's operations are placed where overlapped_cell runs them", "[sim][overlap]") {
  // The example above, f first: each operation's start, time, chain and stream.
  const std::vector<TimedOp> f = {compute(1), comm(3), compute(1)};
  const std::vector<TimedOp> b = {compute(3), comm(1), compute(1)};
  const auto placed = place_cell(f, b, 0);
  const std::vector<std::tuple<double, double, int, int>> expected = {
      {0, 1, 0, 0}, {1, 3, 1, 0}, {1, 3, 0, 1}, {4, 1, 0, 0}, {4, 1, 1, 2}, {5, 1, 1, 0}};
  REQUIRE(placed.size() == expected.size());
  for (std::size_t i = 0; i < placed.size(); ++i) {
    CAPTURE(i);
    const auto& [start, time, chain, stream] = expected[i];
    CHECK(placed[i].start == static_cast<Ticks>(start * ms));
    CHECK(placed[i].time == static_cast<Ticks>(time * ms));
    CHECK(placed[i].chain == chain);
    CHECK(placed[i].stream == stream);
  }
  // One comm stream: both chains' collectives on stream 1.
  for (const PlacedOp& op : place_cell(f, b, 1)) CHECK(op.stream == (op.stream == 0 ? 0 : 1));
  const auto one = place_cell(f, b, 1);
  CHECK(std::count_if(one.begin(), one.end(), [](const PlacedOp& op) { return op.stream == 1; }) == 2);
}

TEST_CASE("a chain of shares takes its task's time", "[sim][overlap]") {
  const std::vector<SubOp> ops = {{.share = 0.25, .comm = false}, {.share = 0.75, .comm = true}};
  const std::vector<TimedOp> c = chain_of(ops, 4 * ms);
  REQUIRE(c.size() == 2);
  CHECK(c[0].time == 1 * ms);
  CHECK(!c[0].comm);
  CHECK(c[1].time == 3 * ms);
  CHECK(c[1].comm);
}

TEST_CASE("Combined 1F1B pairs each backward with the next F, one more F before the first",
          "[sim][overlap]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const CombinedOrder combined = combine_forward_backward(s);
  const Schedule& c = combined.schedule;
  // Device d runs p - d F before its first backward; each later F is paired: m - (p - d) cells.
  CHECK(combined.cells == (8 - 4) + (8 - 3) + (8 - 2) + (8 - 1));
  CHECK(combined.kept_apart == 0);
  CHECK(row(s, 3) == "3F0 3BW0 3F1 3BW1 3F2 3BW2 3F3 3BW3 3F4 3BW4 3F5 3BW5 3F6 3BW6 3F7 3BW7");
  CHECK(row(c, 3) == "3F0 (3F1;3BW0) (3F2;3BW1) (3F3;3BW2) (3F4;3BW3) (3F5;3BW4) (3F6;3BW5) "
                     "(3F7;3BW6) 3BW7");
  CHECK(row(s, 0).starts_with("0F0 0F1 0F2 0F3 0BW0 0F4 0BW1"));
  CHECK(row(c, 0) == "0F0 0F1 0F2 0F3 (0F4;0BW0) (0F5;0BW1) (0F6;0BW2) (0F7;0BW3) 0BW4 0BW5 0BW6 "
                     "0BW7");
  CHECK(validate(c).empty());
  CHECK(find_cycle(c).empty());
  // The W tasks that came between a backward and its F follow the cell.
  const Schedule h =
      combine_forward_backward(make_schedule("zb-h1", {.devices = 4, .microbatches = 8})).schedule;
  // (zb-h1's last device: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3W0 3F4 3B4 3W1 ...)
  CHECK(row(h, 3).starts_with("3F0 (3F1;3B0) (3F2;3B1) (3F3;3B2) (3F4;3B3) 3W0 (3F5;3B4) 3W1"));
  CHECK(find_cycle(h).empty());
  // An order with cells of its own is left as it is.
  const Schedule d = make_schedule("dualpipe-v", {.devices = 4, .microbatches = 8});
  const CombinedOrder own = combine_forward_backward(d);
  CHECK(own.schedule.order == d.order);
  CHECK(own.cells == 0);
}

TEST_CASE("Combined 1F1B of every schedule runs without deadlock, parting only cells that would",
          "[sim][overlap]") {
  for (const ScheduleInfo& info : schedule_registry()) {
    for (const int p : {2, 4, 8}) {
      ScheduleSpec spec{.devices = p, .microbatches = 2 * p};
      Schedule s;
      try {
        s = make_schedule(info.name, spec);
      } catch (const std::exception&) {
        continue;  // not defined at this size
      }
      INFO(info.name << " p=" << p);
      const CombinedOrder c = combine_forward_backward(s);
      CHECK(validate(c.schedule).empty());
      CHECK(find_cycle(c.schedule).empty());
      CHECK(c.schedule.task_count() + static_cast<std::size_t>(c.cells) == s.task_count());
    }
  }
  // V-Min's order: its second chunk's F comes after a backward it waits for through the other
  // devices, so pairing every backward deadlocks; parted, its cells that remain do not.
  const Schedule v = make_schedule("v-min", {.devices = 4, .microbatches = 16});
  const CombinedOrder c = combine_forward_backward(v);
  CHECK(c.kept_apart > 0);
  CHECK(c.cells > 0);
  CHECK(find_cycle(c.schedule).empty());
}

TEST_CASE("cells of sub-operations cost what the scalar FB of that cell costs, in a whole run",
          "[sim][overlap]") {
  // DualPipeV, per device-stage F = 2 (half compute, then half all-to-all), B = 2, W = 1, BW's
  // chain an all-to-all then compute; per chunk (v = 2) F = 1 and BW = 1.5. The cell: F's
  // compute 0-0.5 while BW's all-to-all runs, BW's compute 0.5-1.5 while F's runs: 1.5, not
  // the 2.5 of the sum.
  CostSpec costs = parse_costs("F=2,B=2,W=1,comm=0");
  StageCosts& st = costs.stages[0];
  st.F_ops = {{.share = 0.5, .comm = false}, {.share = 0.5, .comm = true}};
  st.B_ops = {{.share = 0.5, .comm = true}, {.share = 0.5, .comm = false}};
  st.BW_ops = {{.share = 1.0 / 3, .comm = true}, {.share = 2.0 / 3, .comm = false}};
  const Schedule s = make_schedule("dualpipe-v", {.devices = 4, .microbatches = 8});
  const CostModel model = cost_model_for(costs, s);
  const Ticks cell = overlapped_cell(chain_of(st.F_ops, ms), chain_of(st.BW_ops, 3 * ms / 2), 0);
  CHECK(cell == 3 * ms / 2);
  const Task fb = Task::overlapped(0, 0, Kind::BW, 7, 0);  // device 0 holds stages 0 and 7
  CHECK(model.duration(fb) == cell);
  // Its collectives: BW's all-to-all 0-0.5 on the second chain's stream, F's 0.5-1 on the
  // first's; both hidden under the other chain's compute.
  const std::vector<PlacedOp> ops = model.comm_ops(fb);
  REQUIRE(ops.size() == 2);
  CHECK((ops[0].start == 0 && ops[0].time == ms / 2 && ops[0].chain == 1 && ops[0].stream == 2));
  CHECK((ops[1].start == ms / 2 && ops[1].time == ms / 2 && ops[1].chain == 0 && ops[1].stream == 1));
  CHECK(model.task_comm(fb) == ms);
  CHECK(model.exposed_comm(fb) == 0);
  // A lone F of a chunk (1 ms): its all-to-all after its compute, all of it exposed.
  const Task f0 = Task::make(Kind::F, 0, 0);
  const std::vector<PlacedOp> lone = model.comm_ops(f0);
  REQUIRE(lone.size() == 1);
  CHECK((lone[0].start == ms / 2 && lone[0].time == ms / 2 && lone[0].stream == 1));
  CHECK(model.exposed_comm(f0) == ms / 2);
  CHECK(model.task_comm(f0) == ms / 2);
  CHECK(model.comm_ops(Task::make(Kind::W, 0, 0)).empty());
  CostSpec scalar = parse_costs("F=2,B=2,W=1,comm=0");
  scalar.stages[0].FB = 2 * cell;  // per device-stage, halved per chunk
  const Run a = run_schedule(s, costs);
  const Run b = run_schedule(s, scalar);
  CHECK(a.metrics.cost == b.metrics.cost);
  CHECK(a.metrics.makespan == b.metrics.makespan);
  // Without sub-operations an FB is the sum of its parts, as before.
  CHECK(cost_model_for(parse_costs("F=2,B=2,W=1,comm=0"), s).duration(fb) == 5 * ms / 2);
}

TEST_CASE("cells of compute alone meet DualPipe's README bubble (PP/2-1)(F&B+B-3W)",
          "[sim][overlap]") {
  // Sub-operations without communication: F&B = F + B + W (nothing to hide), F = B >= W per
  // chunk, comm 0: the formula holds exactly (tests/schedules/dualpipe_test.cpp for scalars).
  const int p = GENERATE(2, 4, 8);
  CostSpec costs = parse_costs("F=2,B=2,W=1,comm=0");
  StageCosts& st = costs.stages[0];
  st.F_ops = {{.share = 1, .comm = false}};
  st.B_ops = {{.share = 1, .comm = false}};
  st.BW_ops = {{.share = 1, .comm = false}};
  const Run r = run_schedule(make_schedule("dualpipe-v", {.devices = p, .microbatches = 2 * p}), costs);
  // Per chunk (the device-stage's costs halved): F = B = 1, W = 0.5, F&B = 2.5.
  const double pp = 2 * p;
  const double readme = (pp / 2 - 1) * (2.5 + 1.5 - 3 * 0.5);
  CHECK(r.metrics.cost - r.metrics.ideal == static_cast<Ticks>(readme * ms));
}
