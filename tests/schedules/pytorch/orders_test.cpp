// Tests against PyTorch's generated orders (data/golden/pytorch/): the PyTorch-named generators
// token for token, idle slots included, and ppsim's own schedules where they mean the same.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/validate.hpp"
#include "tests/schedules/schedule_checks.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ppsim;
using namespace ppsim::test;

namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string golden_path(const std::string& file) {
  return std::string(PPSIM_SOURCE_DIR) + "/data/golden/pytorch/" + file;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("missing golden file " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `rank0: 0F0 _ 4F0 ...` lines: the tokens of each rank, `_` kept.
Rows golden_rows(const std::string& file) {
  std::istringstream in(slurp(golden_path(file)));
  Rows rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto colon = line.find(':');
    REQUIRE(line.rfind("rank" + std::to_string(rows.size()) + ":", 0) == 0);
    std::istringstream tokens(line.substr(colon + 1));
    rows.emplace_back();
    for (std::string t; tokens >> t;) rows.back().push_back(t);
  }
  return rows;
}

Rows without_idle(Rows rows) {
  for (auto& row : rows) std::erase(row, "_");
  return rows;
}

// A schedule's order in PyTorch's tokens.
Rows pytorch_tokens(const Schedule& s) {
  Rows rows;
  for (const auto& device : s.order) {
    rows.emplace_back();
    for (const Task& t : device) rows.back().push_back(to_string(t, Notation::pytorch));
  }
  return rows;
}

Rows pytorch_tokens(const std::vector<PaddedRow>& slots) {
  Rows rows;
  for (const auto& row : slots) {
    rows.emplace_back();
    for (const auto& slot : row)
      rows.back().push_back(slot ? to_string(*slot, Notation::pytorch) : "_");
  }
  return rows;
}

struct PytorchCase {
  int p, v, m;
  std::string stem(const std::string& cls) const {
    return cls + "_pp" + std::to_string(p) + "_v" + std::to_string(v) + "_m" + std::to_string(m);
  }
  ScheduleSpec spec() const { return {.devices = p, .microbatches = m, .chunks = v}; }
};

std::vector<PaddedRow> slots_of(const std::string& name, const ScheduleSpec& spec) {
  const ScheduleInfo* info = find_schedule(name);
  REQUIRE(info != nullptr);
  REQUIRE(info->pytorch_slots != nullptr);
  return info->pytorch_slots(spec);
}

std::string csv_with_slots(const Schedule& s, const std::vector<PaddedRow>& slots) {
  std::ostringstream out;
  write_pytorch_csv(out, s, slots);
  return out.str();
}

// PyTorch's csv.writer ends rows in \r\n; ppsim's writer in \n.
std::string lf(std::string text) {
  std::erase(text, '\r');
  return text;
}

// Each stage's run of fused backwards on one device, in reverse.
Rows reverse_backward_runs(Rows rows) {
  for (auto& row : rows) {
    for (auto it = row.begin(); it != row.end();) {
      const auto stage_of = [](const std::string& t) { return t.substr(0, t.find('B')); };
      if (it->find('B') == std::string::npos) {
        ++it;
        continue;
      }
      auto end = it;
      while (end != row.end() && end->find('B') != std::string::npos &&
             stage_of(*end) == stage_of(*it))
        ++end;
      std::reverse(it, end);
      it = end;
    }
  }
  return rows;
}

} // namespace

TEST_CASE("interleaved-zb is PyTorch's ScheduleInterleavedZeroBubble, idle slots included",
          "[schedules][pytorch][golden]") {
  const PytorchCase c = GENERATE(PytorchCase{4, 2, 8}, PytorchCase{4, 2, 16}, PytorchCase{2, 2, 4}, PytorchCase{4, 3, 12},
                          PytorchCase{8, 2, 16}, PytorchCase{2, 2, 8}, PytorchCase{4, 2, 4}, PytorchCase{4, 2, 2},
                          PytorchCase{4, 2, 10});
  const std::string stem = c.stem("ScheduleInterleavedZeroBubble");
  CAPTURE(stem);
  const Rows expected = golden_rows(stem + ".txt");
  const auto slots = slots_of("interleaved-zb", c.spec());
  CHECK(pytorch_tokens(slots) == expected);
  const Schedule s = make_schedule("interleaved-zb", c.spec());
  CHECK(pytorch_tokens(s) == without_idle(expected));
  CHECK(s.stage_device == loop_placement(c.p, c.v));
  // and the export is PyTorch's compute-only CSV, empty cells and all
  CHECK(csv_with_slots(s, slots) == lf(slurp(golden_path(stem + ".csv"))));
}

TEST_CASE("zbv-pytorch is PyTorch's ScheduleZBVZeroBubble, masked micro-batches included",
          "[schedules][pytorch][golden]") {
  // m < 2p-1 (4, 6, 7 at p = 4; 2 at p = 2): PyTorch builds the 2p-1 pattern and turns every
  // task of a micro-batch >= m into an idle slot.
  const PytorchCase c = GENERATE(PytorchCase{4, 2, 8}, PytorchCase{4, 2, 16}, PytorchCase{2, 2, 4}, PytorchCase{8, 2, 16},
                          PytorchCase{4, 2, 4}, PytorchCase{4, 2, 7}, PytorchCase{4, 2, 6}, PytorchCase{2, 2, 2});
  const std::string stem = c.stem("ScheduleZBVZeroBubble");
  CAPTURE(stem);
  const Rows expected = golden_rows(stem + ".txt");
  const auto slots = slots_of("zbv-pytorch", c.spec());
  CHECK(pytorch_tokens(slots) == expected);
  const Schedule s = make_schedule("zbv-pytorch", c.spec());
  CHECK(pytorch_tokens(s) == without_idle(expected));
  CHECK(s.stage_device == vshape_placement(c.p));
  CHECK(csv_with_slots(s, slots) == lf(slurp(golden_path(stem + ".csv"))));
}

TEST_CASE("the PyTorch generators refuse what PyTorch refuses, naming the values",
          "[schedules][pytorch]") {
  // PyTorch: "Zero bubble requires the number of microbatches to be a multiple of the number of
  // rounds (2), but got 9."; m = 3 and m = 1 (one round) and v = 1 are accepted.
  CHECK_THROWS_MATCHES(
      make_schedule("interleaved-zb", {.devices = 4, .microbatches = 9}), ConfigError,
      Catch::Message("interleaved-zb: needs microbatches to be a multiple of the rounds max(1, "
                     "microbatches / devices) (got microbatches=9, devices=4, rounds=2)"));
  for (const int m : {1, 3, 10}) CHECK(validate(make_schedule("interleaved-zb", {4, m})).empty());
  CHECK(make_schedule("interleaved-zb", {.devices = 4, .microbatches = 8, .chunks = 1}).chunks() ==
        1);
  CHECK(make_schedule("interleaved-zb", {.devices = 4, .microbatches = 8}).chunks() == 2);
  CHECK_THROWS_MATCHES(make_schedule("interleaved-zb", {.devices = 4, .microbatches = 8,
                                                        .chunks = 65}),
                       ConfigError,
                       Catch::Message("interleaved-zb: needs 1 <= chunks <= 64 (got chunks=65)"));
  // PyTorch: "ZBV requires exactly 2 stages per rank, but got 3."; any m >= 1.
  CHECK_THROWS_MATCHES(
      make_schedule("zbv-pytorch", {.devices = 4, .microbatches = 12, .chunks = 3}), ConfigError,
      Catch::Message("zbv-pytorch: supports chunks=2 only, a V of two chunks per device (got "
                     "chunks=3)"));
  for (const int m : {1, 2, 3}) CHECK(validate(make_schedule("zbv-pytorch", {4, m})).empty());
}

TEST_CASE("the PyTorch generators keep their slots and order in step for every shape",
          "[schedules][pytorch][property]") {
  const std::string name = GENERATE("interleaved-zb", "zbv-pytorch");
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 4, 6, 7, 8, 12, 16);
  const int v = GENERATE(0, 1, 2, 3);
  CAPTURE(name, p, m, v);
  const ScheduleSpec spec{.devices = p, .microbatches = m, .chunks = v};
  if (!accepts(*find_schedule(name), spec)) return;
  const Schedule s = make_schedule(name, spec);
  const auto slots = slots_of(name, spec);
  // write_pytorch_csv checks that the slots hold exactly the order
  CHECK_NOTHROW(csv_with_slots(s, slots));
  // every device's row starts with one idle slot per device before it, as PyTorch's do
  for (int d = 0; d < p; ++d) {
    const auto& row = slots[static_cast<std::size_t>(d)];
    REQUIRE(row.size() > static_cast<std::size_t>(d));
    for (int i = 0; i < d; ++i) CHECK_FALSE(row[static_cast<std::size_t>(i)].has_value());
  }
}

TEST_CASE("1f1b is Schedule1F1B's runtime order and gpipe is ScheduleGPipe's",
          "[schedules][pytorch][golden]") {
  // Schedule1F1B needs m >= p, ppsim's 1f1b also runs m < p (warm-up clamped to m).
  for (const PytorchCase c : {PytorchCase{4, 1, 8}, PytorchCase{2, 1, 4}}) {
    CAPTURE(c.p, c.m);
    CHECK(pytorch_tokens(make_schedule("1f1b", {c.p, c.m})) ==
          golden_rows(c.stem("Schedule1F1B") + ".runtime.txt"));
    CHECK(pytorch_tokens(make_schedule("gpipe", {c.p, c.m})) ==
          without_idle(golden_rows(c.stem("ScheduleGPipe") + ".txt")));
  }
}

TEST_CASE("interleaved-1f1b is ScheduleInterleaved1F1B wherever m % p == 0, and refuses PyTorch's "
          "other rounds",
          "[schedules][pytorch][golden]") {
  for (const PytorchCase c : {PytorchCase{4, 2, 8}, PytorchCase{4, 2, 16}, PytorchCase{2, 2, 4}, PytorchCase{4, 2, 4},
                       PytorchCase{4, 3, 12}}) {
    CAPTURE(c.p, c.v, c.m);
    CHECK(pytorch_tokens(make_schedule("interleaved-1f1b", c.spec())) ==
          without_idle(golden_rows(c.stem("ScheduleInterleaved1F1B") + ".txt")));
  }
  // PyTorch runs max(1, m / p) rounds of m / rounds micro-batches (m = 10: 2 rounds of 5;
  // m = 2: 1 round of 2); ppsim keeps Megatron's groups of p and its m % p == 0.
  for (const int m : {2, 10}) {
    CAPTURE(m);
    CHECK_FALSE(golden_rows(PytorchCase{4, 2, m}.stem("ScheduleInterleaved1F1B") + ".txt").empty());
    CHECK_THROWS_AS(make_schedule("interleaved-1f1b", {.devices = 4, .microbatches = m}),
                    ConfigError);
  }
}

TEST_CASE("looped-bfs is ScheduleLoopedBFS with each stage's backwards in ascending order",
          "[schedules][pytorch][golden]") {
  // The one difference: PyTorch runs a stage's backwards from the last micro-batch down to 0,
  // ppsim (Lamy-Poirier's figure) from 0 up. Both orders free the same memory and, with equal
  // micro-batches, cost the same.
  for (const PytorchCase c : {PytorchCase{4, 2, 8}, PytorchCase{2, 2, 4}}) {
    CAPTURE(c.p, c.m);
    const Rows theirs = without_idle(golden_rows(c.stem("ScheduleLoopedBFS") + ".txt"));
    const Rows ours = pytorch_tokens(make_schedule("looped-bfs", c.spec()));
    CHECK(ours != theirs);
    CHECK(ours == reverse_backward_runs(theirs));
    // the same timeline: PyTorch's order, read back as a file, costs what ours does
    std::string csv;
    for (const auto& row : theirs) {
      for (std::size_t i = 0; i < row.size(); ++i) csv += (i == 0 ? "" : ",") + row[i];
      csv += '\n';
    }
    const CostSpec costs = parse_costs("F=1.3,B=0.7,W=0.4,comm=0.3");
    const Run pytorch = run_schedule(parse_pytorch_csv(csv, "bfs.csv"), costs);
    const Run ppsim = run_schedule(make_schedule("looped-bfs", c.spec()), costs);
    CHECK(pytorch.metrics.cost == ppsim.metrics.cost);
    CHECK(pytorch.metrics.makespan == ppsim.metrics.makespan);
    CHECK(pytorch.metrics.peak_memory == ppsim.metrics.peak_memory);
  }
  // ScheduleLoopedBFS has no condition on m; ppsim's looped-bfs needs m % p == 0.
  CHECK_THROWS_AS(make_schedule("looped-bfs", {.devices = 4, .microbatches = 1}), ConfigError);
}

TEST_CASE("zb-h1 is ScheduleInterleavedZeroBubble with one stage per rank",
          "[schedules][pytorch]") {
  // With v = 1 the rounds do not matter, so the order is ZB-H1's wherever PyTorch accepts m.
  const int p = GENERATE(1, 2, 3, 4, 5, 8);
  const int m = GENERATE(1, 2, 3, 4, 6, 8, 9, 12, 16);
  CAPTURE(p, m);
  const ScheduleSpec one{.devices = p, .microbatches = m, .chunks = 1};
  if (!accepts(*find_schedule("interleaved-zb"), one)) {
    CHECK(m % (m / p) != 0);  // PyTorch's rounds rule is the only refusal
    return;
  }
  CHECK(make_schedule("interleaved-zb", one).order ==
        make_schedule("zb-h1", {.devices = p, .microbatches = m}).order);
}

TEST_CASE("dualpipe-v is ScheduleDualPipeV: our BW is its B, our FB its OVERLAP_F_B",
          "[schedules][pytorch][golden]") {
  for (const PytorchCase c : {PytorchCase{4, 2, 8}, PytorchCase{4, 2, 10}, PytorchCase{2, 2, 4}, PytorchCase{2, 2, 6}}) {
    CAPTURE(c.p, c.m);
    CHECK(pytorch_tokens(make_schedule("dualpipe-v", c.spec())) ==
          golden_rows(c.stem("ScheduleDualPipeV") + ".txt"));
  }
}

TEST_CASE("every registry entry that names a PyTorch class is one of torch's schedule classes",
          "[schedules][pytorch]") {
  const std::vector<std::string> classes{
      "ScheduleGPipe", "Schedule1F1B", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
      "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV"};
  std::vector<std::string> named;
  for (const ScheduleInfo& info : schedule_registry()) {
    if (info.pytorch_class.empty()) continue;
    CAPTURE(info.name);
    CHECK(std::find(classes.begin(), classes.end(), info.pytorch_class) != classes.end());
    named.emplace_back(info.name);
  }
  CHECK(named == std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs",
                                          "zb-h1", "dualpipe-v", "interleaved-zb",
                                          "zbv-pytorch"});
}
