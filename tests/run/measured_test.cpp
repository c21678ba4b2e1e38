// Tests of measured runs: the trace readers (Kineto, Megatron timers, ppsim), the measured
// schedule and its clocks, the cost fit, and diff's errors and idle causes on planted runs.
#include "ppsim/run/measured.hpp"

#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/viz/chrome_trace.hpp"
#include "tests/cli/cli_harness.hpp"
#include "tests/run/measured_fixtures.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <zlib.h>

using namespace ppsim;
using namespace ppsim::test;

namespace {

struct Played {
  Schedule schedule;
  Timeline timeline;
};

Played played(const std::string& name, int p, int m, const std::string& costs, double noise,
              PlayPlan plan = {}) {
  Played out;
  out.schedule = make_schedule(name, {.devices = p, .microbatches = m});
  const CostSpec spec = parse_costs(costs);
  const CostModel model = cost_model_for(spec, out.schedule);
  if (plan.durations.empty()) plan.durations = noisy_durations(out.schedule, model, noise);
  plan.comm = spec.comm;
  out.timeline = play(out.schedule, plan);
  return out;
}

std::vector<std::string> kineto_ranks(const Timeline& t, bool gpu = false,
                                      const std::vector<Ticks>& skew = {}) {
  std::vector<std::string> texts;
  for (int r = 0; r < t.devices; ++r)
    texts.push_back(kineto_trace(t, r, gpu, skew.empty() ? 0 : skew[static_cast<std::size_t>(r)]));
  return texts;
}

std::vector<std::string> rank_names(int p) {
  std::vector<std::string> n;
  for (int r = 0; r < p; ++r) n.push_back(fmt::format("host_{}.pt.trace.json", 100 + r));
  return n;
}

MeasuredRun import_texts(const std::vector<std::string>& texts, const std::vector<std::string>& names,
                         const ImportOptions& o = {}) {
  return measured_run(parse_traces(texts, names, o));
}

// The run index of a task in a timeline.
int run_of(const Timeline& t, const Task& task) {
  for (std::size_t i = 0; i < t.runs.size(); ++i)
    if (t.runs[i].task == task) return static_cast<int>(i);
  FAIL("no run of " << to_string(task));
  return -1;
}

Ticks idle_of(const DiffReport& d, int device, const Task& next, IdleCause cause) {
  Ticks sum = 0;
  for (const IdleWindow& w : d.windows)
    if (w.device == device && w.next == next && w.cause == cause) sum += w.end - w.start;
  return sum;
}

} // namespace

TEST_CASE("PyTorch's profiler ranges name ppsim's F, B, W and BW", "[run][measured]") {
  const std::string t = R"({"distributedInfo":{"rank":0},"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"PP:0F1","pid":1,"tid":1,"ts":0,"dur":1},
    {"ph":"X","cat":"user_annotation","name":"PP:0I1","pid":1,"tid":1,"ts":2,"dur":1},
    {"ph":"X","cat":"user_annotation","name":"PP:0W1","pid":1,"tid":1,"ts":4,"dur":1},
    {"ph":"X","cat":"user_annotation","name":"PP:0F0","pid":1,"tid":1,"ts":6,"dur":1},
    {"ph":"X","cat":"user_annotation","name":"PP:0B0","pid":1,"tid":1,"ts":8,"dur":1.5},
    {"ph":"X","cat":"user_annotation","name":"PP:0SEND_F0","pid":1,"tid":1,"ts":9.5,"dur":0.2}]})";
  const ImportedTrace tr = parse_traces({t}, {"trace.json"}, {});
  REQUIRE(tr.actions.size() == 5);
  CHECK(tr.actions[0].task == Task::make(Kind::F, 0, 1));
  CHECK(tr.actions[1].task == Task::make(Kind::B, 0, 1));
  CHECK(tr.actions[2].task == Task::make(Kind::W, 0, 1));
  CHECK(tr.actions[4].task == Task::make(Kind::BW, 0, 0));
  CHECK(tr.actions[4].end - tr.actions[4].start == 1500);  // microseconds, exactly
  CHECK(tr.comm_actions_skipped == 1);
  CHECK(tr.format == "kineto");
}

TEST_CASE("a ppsim trace imports back to the same run: zero error", "[run][measured]") {
  const auto name = GENERATE(as<std::string>{}, "1f1b", "zb-h1", "zb-v", "interleaved-1f1b",
                             "dualpipe", "dualpipe-v");
  CAPTURE(name);
  const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
  const Run r = run_schedule(s, parse_costs("F=2,B=2,W=2,comm=0.5"));
  std::ostringstream trace;
  write_chrome_trace(trace, r);
  const MeasuredRun m = import_texts({trace.str()}, {"sim.json"});
  CHECK(m.format == "ppsim");
  CHECK(m.run.schedule.order == r.schedule.order);
  CHECK(m.run.schedule.stage_device == r.schedule.stage_device);
  CHECK(m.run.schedule.routes == r.schedule.routes);
  CHECK(m.run.schedule.microbatch_route == r.schedule.microbatch_route);
  CHECK(m.run.metrics.cost == r.metrics.cost);
  const CostFit fit = fit_costs(m);
  CHECK(fit.comm_ms == 0.5);
  CHECK(fit.replay_cost_error == 0);
  const DiffReport d = diff_measured(m, fit.costs);
  CHECK(d.cost_error == 0);
  CHECK(d.makespan_error == 0);
  CHECK(d.replay_cost_error == 0);
  CHECK(d.end_error_max_ms == 0);
  CHECK(d.start_error_max_ms == 0);
}

TEST_CASE("a sliced run's trace imports back with its slices: zero error", "[run][measured]") {
  const auto name = GENERATE(as<std::string>{}, "seq1f1b", "seq-zb-h1", "interleaved-seq1f1b");
  CAPTURE(name);
  const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 4, .slices = 2});
  const Run r = run_schedule(s, parse_costs("F=2,B=2,W=2,comm=0.5"));
  std::ostringstream trace;
  write_chrome_trace(trace, r);
  const MeasuredRun m = import_texts({trace.str()}, {"sim.json"});
  CHECK(m.run.schedule.slices == 2);
  CHECK(m.run.schedule.microbatches == 8);  // units
  CHECK(m.run.schedule.order == r.schedule.order);
  CHECK(m.run.metrics.cost == r.metrics.cost);
  const CostFit fit = fit_costs(m);
  const DiffReport d = diff_measured(m, fit.costs);
  CHECK(d.cost_error == 0);
  CHECK(d.end_error_max_ms == 0);
  // a slice arg that does not match its task's unit is refused
  std::string bad = trace.str();
  const auto at = bad.find("\"slice\":1");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 9, "\"slice\":0");
  CHECK_THROWS_WITH(import_texts({bad}, {"sim.json"}), Catch::Contains("says slice 0, but the trace's tasks are cut into"));
  std::string huge = trace.str();
  huge.replace(huge.find("\"slice\":1"), 9, "\"slice\":99");
  CHECK_THROWS_WITH(import_texts({huge}, {"sim.json"}), Catch::Contains("slice 99 is out of range (0..63)"));
}

TEST_CASE("the fit recovers the costs of a noisy Kineto run within the noise", "[run][measured]") {
  const bool gpu = GENERATE(false, true);
  CAPTURE(gpu);
  // 1F1B with fused backwards, durations within +-5 %, messages 0.1 ms.
  const Played pl = played("1f1b", 4, 16, "F=1,B=1,W=1,comm=0.1", 0.05);
  const MeasuredRun m = import_texts(kineto_ranks(pl.timeline, gpu), rank_names(4));
  CHECK(m.device_time == gpu);
  CHECK(m.run.schedule.order == pl.schedule.order);
  const CostFit fit = fit_costs(m);
  REQUIRE(fit.stages.size() == 4);
  for (const StageFit& s : fit.stages) {
    CAPTURE(s.stage);
    CHECK(s.kinds[static_cast<std::size_t>(Kind::F)].median_ms == Approx(1).epsilon(0.05));
    CHECK(s.kinds[static_cast<std::size_t>(Kind::BW)].median_ms == Approx(2).epsilon(0.05));
    CHECK(s.kinds[static_cast<std::size_t>(Kind::F)].samples == 16);
  }
  // The GPU ranges are drawn 1 ns wider on each side: the latency is within 2 ns.
  CHECK(fit.comm_ms == Approx(0.1).margin(2e-6));
  CHECK(std::abs(fit.replay_cost_error) < 0.05);
  const DiffReport d = diff_measured(m, fit.costs);
  CHECK(std::abs(d.cost_error) < 0.05);
  // The replay on the measured durations explains the run up to the GPU ranges' nanoseconds.
  CHECK(std::abs(d.replay_cost_error) < 1e-5);
}

TEST_CASE("diff names a planted straggler and the waits it causes", "[run][measured]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  PlayPlan plan;
  plan.durations = noisy_durations(s, cost_model_for(parse_costs("F=1,B=1,W=1"), s), 0.02);
  // Stage 1's forward of micro-batch 5 takes 4 ms instead of 1.
  Timeline probe = play(s, {plan.durations, 0, {}});
  const int slow = run_of(probe, Task::make(Kind::F, 1, 5));
  plan.durations[static_cast<std::size_t>(slow)] = 4'000'000;
  const Played pl{s, play(s, plan)};
  const MeasuredRun m = import_texts(kineto_ranks(pl.timeline), rank_names(4));
  const DiffReport d = diff_measured(m, fit_costs(m).costs);
  CHECK(d.straggler[static_cast<std::size_t>(run_of(m.run.timeline, Task::make(Kind::F, 1, 5)))]);
  std::size_t flagged = 0;
  for (const char f : d.straggler) flagged += f != 0;
  CHECK(flagged == 1);
  // Stage 2 waits for it: about 3 ms of straggler before its F5.
  CHECK(ticks_to_ms(idle_of(d, 2, Task::make(Kind::F, 2, 5), IdleCause::straggler)) ==
        Approx(3).margin(0.2));
  CHECK(d.cause_total[static_cast<std::size_t>(IdleCause::straggler)] > 3'000'000);
}

TEST_CASE("diff names a planted message delay as comm, at its place", "[run][measured]") {
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  PlayPlan plan;
  plan.durations = noisy_durations(s, cost_model_for(parse_costs("F=1,B=1,W=1"), s), 0.02);
  plan.comm = 50'000;
  const Timeline probe = play(s, plan);
  // The activation of micro-batch 6 from stage 2 to 3 is 2.5 ms late.
  const int from = run_of(probe, Task::make(Kind::F, 2, 6));
  const int to = run_of(probe, Task::make(Kind::F, 3, 6));
  plan.delay[{from, to}] = 2'500'000;
  const Played pl{s, play(s, plan)};
  const MeasuredRun m = import_texts(kineto_ranks(pl.timeline), rank_names(4));
  const CostFit fit = fit_costs(m);
  CHECK(fit.comm_ms == Approx(0.05).margin(1e-9));  // the median ignores one late message
  const DiffReport d = diff_measured(m, fit.costs);
  // The wait before stage 3's F6 is the late message once its producer had ended.
  // From the producer's end: the latency and the planted delay, exactly.
  CHECK(idle_of(d, 3, Task::make(Kind::F, 3, 6), IdleCause::comm) == 2'550'000);
  // The leading windows are the schedule's ramp-up, the trailing ones its drain.
  for (const IdleWindow& w : d.windows)
    if (w.start == 0) CHECK(w.cause == IdleCause::warmup);
  CHECK(d.cause_total[static_cast<std::size_t>(IdleCause::warmup)] > 0);
  CHECK(d.cause_total[static_cast<std::size_t>(IdleCause::cooldown)] > 0);
  Ticks sum = 0;
  for (const Ticks t : d.cause_total) sum += t;
  CHECK(sum == d.idle_total);
  // Every idle moment of every device is in exactly one window.
  for (const DeviceMetrics& dm : m.run.metrics.per_device) {
    Ticks idle = 0;
    for (const IdleWindow& w : d.windows)
      if (w.device == dm.device) idle += w.end - w.start;
    CHECK(idle == m.run.metrics.makespan - dm.busy);
  }
}

TEST_CASE("an optimizer step between tasks is idle time of its own cause", "[run][measured]") {
  const std::string t = R"({"distributedInfo":{"rank":0},"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"PP:0F0","pid":1,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"user_annotation","name":"Optimizer.step#AdamW.step","pid":1,"tid":1,"ts":1200,"dur":500},
    {"ph":"X","cat":"user_annotation","name":"PP:0B0","pid":1,"tid":1,"ts":2000,"dur":1000}]})";
  const MeasuredRun m = import_texts({t}, {"t.json"});
  const DiffReport d = diff_measured(m, fit_costs(m).costs);
  CHECK(d.cause_total[static_cast<std::size_t>(IdleCause::optimizer)] == 500'000);
  CHECK(d.cause_total[static_cast<std::size_t>(IdleCause::host)] == 500'000);
}

TEST_CASE("Megatron's per-micro-batch timer dumps import as fused-backward runs", "[run][measured]") {
  const Played pl = played("1f1b", 4, 8, "F=1,B=1,W=1,comm=0.2", 0.03);
  std::vector<std::string> texts, names;
  for (int r = 3; r >= 0; --r) {  // any order: the file names carry the ranks
    texts.push_back(megatron_dump(pl.timeline, r));
    names.push_back("logs/" + megatron_name(4, r));
  }
  const ImportedTrace tr = parse_traces(texts, names, {});
  CHECK(tr.format == "megatron-timers");
  const MeasuredRun m = measured_run(tr);
  CHECK(m.run.schedule.order == pl.schedule.order);
  CHECK(m.files.front() == "logs/" + megatron_name(4, 0));
  const CostFit fit = fit_costs(m);
  CHECK(fit.comm_ms == Approx(0.2).margin(1e-6));
  // B and W of a fused backward: split evenly (each GEMM's dX and dW cost the same FLOPs).
  const auto& bw = fit.stages[0].kinds[static_cast<std::size_t>(Kind::BW)];
  CHECK(fit.costs.stages[0].BW == -1);  // B + W
  CHECK(ticks_to_ms(fit.costs.stages[0].B + fit.costs.stages[0].W) == Approx(bw.median_ms));
  CHECK(std::abs(fit.costs.stages[0].B - fit.costs.stages[0].W) <= 1);  // an odd ns goes to W
}

TEST_CASE("skewed clocks are aligned on message pairs", "[run][measured]") {
  const Played pl = played("1f1b", 4, 8, "F=1,B=1,W=1,comm=0.1", 0.02);
  const MeasuredRun straight = import_texts(kineto_ranks(pl.timeline), rank_names(4));
  // Rank 2's clock is 40 ms behind, rank 3's 7 ms ahead: consumers start before producers end.
  const MeasuredRun skewed =
      import_texts(kineto_ranks(pl.timeline, false, {0, 0, -40'000'000, 7'000'000}), rank_names(4));
  CHECK(straight.clock_offset == std::vector<Ticks>{0, 0, 0, 0});
  CHECK(skewed.clock_offset[2] == Approx(40'000'000).margin(100'000));
  CHECK(skewed.clock_offset[3] == Approx(-7'000'000).margin(100'000));
  CHECK(ticks_to_ms(skewed.run.metrics.cost) == Approx(ticks_to_ms(straight.run.metrics.cost)).margin(0.1));
  const DiffReport d = diff_measured(skewed, fit_costs(skewed).costs);
  CHECK(std::abs(d.replay_cost_error) < 0.01);
}

TEST_CASE("a --map reads ranges with other names, --iteration picks one of several",
          "[run][measured]") {
  const Played pl = played("1f1b", 2, 4, "F=1,B=1,W=1", 0);
  // Two iterations back to back, named `fwd s<stage> mb<mb>` / `bwd ...`.
  std::vector<std::string> texts;
  for (int r = 0; r < 2; ++r) {
    std::string e;
    for (int it = 0; it < 2; ++it)
      for (const TaskRun& run : pl.timeline.device_runs(r)) {
        const Ticks shift = it * 100'000'000;
        e += fmt::format(R"({}{{"ph":"X","name":"{} s{} mb{}","pid":1,"tid":1,"ts":{},"dur":{}}})",
                         e.empty() ? "" : ",", run.task.kind == Kind::F ? "fwd" : "bwd",
                         run.task.stage, run.task.microbatch, kineto_us(run.start + shift),
                         kineto_us(run.end - run.start + it * 1000));
      }
    texts.push_back(fmt::format(R"({{"distributedInfo":{{"rank":{}}},"traceEvents":[{}]}})", r, e));
  }
  // Without a map: a clear error with the names seen and a map that would take them.
  CHECK_THROWS_WITH(parse_traces(texts, {"a.json", "b.json"}, {}),
                    Catch::Contains("no pipeline action recognised") &&
                        Catch::Contains("'bwd s0 mb0' x2") &&
                        Catch::Contains("--map 'bwd s(?<stage>\\d+) mb(?<mb>\\d+)=BW'"));
  ImportOptions o;
  o.maps = {parse_trace_map(R"(fwd s(?<stage>\d+) mb(?<mb>\d+)=F)"),
            parse_trace_map(R"(bwd s(?<stage>\d+) mb(?<mb>\d+)=BW)")};
  const ImportedTrace last = parse_traces(texts, {"a.json", "b.json"}, o);
  CHECK(last.iterations == 2);
  CHECK(last.iteration == 1);
  CHECK(last.actions.size() == 16);
  CHECK(last.actions.front().end - last.actions.front().start == 1'001'000);
  o.iteration = 0;
  CHECK(parse_traces(texts, {"a.json", "b.json"}, o).actions.front().end -
            parse_traces(texts, {"a.json", "b.json"}, o).actions.front().start ==
        1'000'000);
  o.iteration = 2;
  CHECK_THROWS_WITH(parse_traces(texts, {"a.json", "b.json"}, o),
                    Catch::Contains("2 complete iterations"));
}

TEST_CASE("a --map that is not one is refused with what is wrong", "[run][measured][robust]") {
  CHECK_THROWS_WITH(parse_trace_map("fwd"), Catch::Contains("expected REGEX=KIND"));
  CHECK_THROWS_WITH(parse_trace_map("fwd(?<mb>\\d+)=X"), Catch::Contains("unknown kind 'X'"));
  CHECK_THROWS_WITH(parse_trace_map("fwd=F"), Catch::Contains("(?<mb>"));
  CHECK_THROWS_WITH(parse_trace_map("f(?<rank>\\d+)(?<mb>\\d+)=F"), Catch::Contains("unknown group 'rank'"));
  CHECK_THROWS_WITH(parse_trace_map("f((?<mb>\\d+)=F"), Catch::Contains("not a regular expression"));
  CHECK(parse_trace_map("Optimizer.*=optimizer").optimizer);
  const TraceMap m = parse_trace_map(R"(x(a)(?<chunk>\d+)_(?:y)(?<mb>\d+)=B)");
  CHECK(m.chunk_group == 2);
  CHECK(m.mb_group == 3);
}

TEST_CASE("bad traces are refused with a clear error, bounded", "[run][measured][robust]") {
  const auto refused = [](const std::string& text, const std::string& what) {
    CAPTURE(text.substr(0, 80));
    CHECK_THROWS_WITH(parse_traces({text}, {"t.json"}, {}), Catch::Contains(what));
  };
  refused("", "empty");
  refused("garbage", "neither a Chrome trace");
  refused(R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":1,"dur":)", "not valid JSON");
  refused(R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":1e400,"dur":1}]})", "not valid JSON");
  refused(R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":1e300,"dur":1}]})", "out of range");
  refused(R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":1,"dur":-5}]})", "out of range");
  refused(R"({"traceEvents":[)" + std::string(100, '[') + std::string(100, ']') + "]}",
          "nested deeper than 64");
  refused(R"({"traceEvents":[{"ph":"X","name":"aten::mm","ts":1,"dur":1}]})", "'aten::mm' x1");
  // Two ranges of one rank that overlap.
  CHECK_THROWS_WITH(
      measured_run(parse_traces(
          {R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":0,"dur":10},{"ph":"X","name":"PP:0F1","ts":5,"dur":10}]})"},
          {"t.json"}, {})),
      Catch::Contains("overlap"));
  // Ids beyond 64 bits and times far apart are bounded, not overflowed (fuzzing found the first).
  CHECK_NOTHROW(parse_traces({R"([{"ph":"X","name":"Forward 0","ts":1,"dur":1,"pid":3e32,"tid":-3e32},{"ph":"X","name":"Backward 0","ts":3,"dur":1,"pid":3e32,"tid":1}])"},
                             {"t.json"}, {}));
  refused(R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":-3.9e15,"dur":1},{"ph":"X","name":"PP:0B0","ts":3.9e15,"dur":1}]})",
          "the actions span more than");
  // A stage on two ranks.
  CHECK_THROWS_AS(measured_run(parse_traces(
                      {R"({"distributedInfo":{"rank":0},"traceEvents":[{"ph":"X","name":"PP:0F0","ts":0,"dur":1}]})",
                       R"({"distributedInfo":{"rank":1},"traceEvents":[{"ph":"X","name":"PP:0F1","ts":0,"dur":1}]})"},
                      {"a", "b"}, {})),
                  ScheduleError);
  // A task missing: the measured order is no schedule.
  CHECK_THROWS_WITH(measured_run(parse_traces(
                        {R"({"traceEvents":[{"ph":"X","name":"PP:0F0","ts":0,"dur":1},{"ph":"X","name":"PP:0F1","ts":2,"dur":1},{"ph":"X","name":"PP:0B0","ts":4,"dur":1}]})"},
                        {"a"}, {})),
                    Catch::Contains("not a schedule"));
}

TEST_CASE("ranks missing, twice, or out of range are named", "[run][measured][robust]") {
  const Played pl = played("1f1b", 3, 4, "F=1,B=1,W=1", 0);
  const auto t = kineto_ranks(pl.timeline);
  CHECK_THROWS_WITH(parse_traces({t[0], t[2]}, {"a", "b"}, {}), Catch::Contains("ranks missing: no action of rank 1"));
  CHECK_THROWS_WITH(parse_traces({t[0], t[0]}, {"a", "b"}, {}), Catch::Contains("both are rank 0"));
  CHECK_THROWS_WITH(parse_traces({R"({"distributedInfo":{"rank":99999},"traceEvents":[]})"}, {"a"}, {}),
                    Catch::Contains("out of range"));
}

TEST_CASE("gzip traces are read streaming, a decompression bomb stops at the bound",
          "[run][measured][robust]") {
  TempDir dir("ppsim-import-gz");
  const Played pl = played("1f1b", 2, 4, "F=1,B=1,W=1,comm=0.1", 0.01);
  std::vector<std::string> files;
  for (int r = 0; r < 2; ++r) {
    const std::string path = (dir.path() / fmt::format("rank-{}.json.gz", r)).string();
    gzFile gz = gzopen(path.c_str(), "wb");
    const std::string text = kineto_trace(pl.timeline, r);
    gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
    gzclose(gz);
    files.push_back(path);
  }
  const MeasuredRun m = measured_run(read_traces(files, {}));
  CHECK(m.run.schedule.order == pl.schedule.order);
  // 64 MiB of spaces compress to about 64 KiB: read no more than the bound.
  const std::string bomb = (dir.path() / "bomb.json.gz").string();
  {
    gzFile gz = gzopen(bomb.c_str(), "wb9");
    gzwrite(gz, "{\"traceEvents\":[", 16);
    const std::string spaces(1 << 20, ' ');
    for (int i = 0; i < 64; ++i) gzwrite(gz, spaces.data(), static_cast<unsigned>(spaces.size()));
    gzclose(gz);
  }
  ImportOptions o;
  o.max_bytes = 8u << 20;
  CHECK_THROWS_WITH(read_traces({bomb}, o), Catch::Contains("larger than 8.0 MiB"));
  // A truncated gzip stream.
  const std::string cut = (dir.path() / "cut.json.gz").string();
  {
    std::ifstream in(files[0], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THROWS_AS(read_traces({cut}, {}), ConfigError);
  // A FIFO with no writer is refused at once, not waited on.
  const std::string fifo = (dir.path() / "fifo.in").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_traces({fifo}, {}), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(read_traces({(dir.path() / "none.json").string()}, {}),
                    Catch::Contains("cannot open"));
}

// A Kineto trace with PyTorch's send actions: after each task that sends, a `PP:<stage>SEND_F<mb>`
// (or SEND_B) range holding the NCCL send's record_param_comms (its size: `bytes` of fp32) and,
// on the GPU, the kernel that carries the same sizes.
std::string with_sends(std::string trace, const Timeline& t, int rank,
                       const std::function<double(const Task&)>& bytes) {
  std::string e;
  const long long pid = 4000 + rank;
  for (const TaskRun& r : t.device_runs(rank)) {
    const bool sends_forward = r.task.kind == Kind::F && r.task.stage + 1 < t.devices;
    const bool sends_back = (r.task.kind == Kind::B || r.task.kind == Kind::BW) && r.task.stage > 0;
    if (!sends_forward && !sends_back) continue;
    const std::string name = fmt::format("PP:{}SEND_{}{}", r.task.stage, sends_forward ? 'F' : 'B',
                                         r.task.microbatch);
    const auto nelems = static_cast<long long>(bytes(r.task) / 4);
    const std::string args = fmt::format(
        R"("Collective name":"send","In msg nelems":{},"Out msg nelems":{},"Group size":2,"dtype":"Float")",
        nelems, nelems);
    e += fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":{},"tid":{},"ts":{},"dur":3.000}},)",
                     name, pid, pid, kineto_us(r.end));
    e += fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":{},"tid":{},"ts":{},"dur":1.000,"args":{{{}}}}},)",
                     pid, pid, kineto_us(r.end + 1000), args);
    e += fmt::format(R"({{"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv","pid":{},"tid":20,"ts":{},"dur":5.000,"args":{{{}}}}},)",
                     rank, kineto_us(r.end + 2000), args);
  }
  const auto at = trace.find("\"traceEvents\":[");
  trace.insert(at + 15, e);
  return trace;
}

TEST_CASE("a link is fitted from the sizes of the sends: latency and bandwidth",
          "[run][measured]") {
  // Activations of 1 MB forward and gradients of 4 MB back over a link of 50 us and 10 GB/s:
  // each message waits 50 us + bytes / 10 GB/s (150 us forward, 450 us back).
  const Schedule s = make_schedule("1f1b", {.devices = 4, .microbatches = 8});
  const auto size_of = [](const Task& t) { return t.kind == Kind::F ? 1e6 : 4e6; };
  PlayPlan plan;
  plan.durations = noisy_durations(s, cost_model_for(parse_costs("F=1,B=1,W=1"), s), 0.02);
  plan.comm = 50'000;
  {
    const Timeline probe = play(s, plan);
    for (std::size_t q = 0; q < probe.runs.size(); ++q)
      for (std::size_t r = 0; r < probe.runs.size(); ++r) {
        const Task& a = probe.runs[q].task;
        const Task& b = probe.runs[r].task;
        if (a.microbatch != b.microbatch) continue;
        const bool forward = a.kind == Kind::F && b.kind == Kind::F && b.stage == a.stage + 1;
        const bool back = a.kind == Kind::BW && b.kind == Kind::BW && b.stage + 1 == a.stage;
        if (forward || back)
          plan.delay[{static_cast<int>(q), static_cast<int>(r)}] =
              static_cast<Ticks>(size_of(a) / 10.0);  // bytes / (10 bytes per ns)
      }
  }
  const Timeline t = play(s, plan);
  std::vector<std::string> texts;
  for (int r = 0; r < 4; ++r) texts.push_back(with_sends(kineto_trace(t, r, /*gpu=*/false), t, r, size_of));
  const ImportedTrace tr = parse_traces(texts, rank_names(4), {});
  // 8 micro-batches x 3 boundaries each way, each counted once (not again for its GPU kernel)
  REQUIRE(tr.messages.size() == 48);
  CHECK(tr.messages.front() == MeasuredMessage{Kind::F, 0, 0, 1e6});
  CHECK(tr.messages.back() == MeasuredMessage{Kind::B, 3, 7, 4e6});
  const MeasuredRun m = measured_run(tr);
  const CostFit fit = fit_costs(m);
  REQUIRE(fit.link.fitted);
  CHECK(fit.link.sizes == 2);
  CHECK(fit.link.latency == 50'000);
  CHECK(fit.link.bandwidth == Approx(10).epsilon(1e-9));
  CHECK(fit.link.residual == Approx(0).margin(1e-9));
  CHECK(fit.costs.link.sized);
  for (const StageCosts& c : fit.costs.stages) {
    CHECK(c.act_bytes == (&c == &fit.costs.stages.back() ? 0 : 1e6));
    CHECK(c.grad_bytes == (&c == &fit.costs.stages.front() ? 0 : 4e6));
  }
  // The fitted file carries the link; it reads back, and a run on it sizes its messages.
  const CostSpec back = parse_cost_json(fitted_costs_json(fit, m), "fitted.json");
  CHECK(back.link == fit.costs.link);
  CHECK(back.stages == fit.costs.stages);
  const CommOptions comm = with_cost_link({}, back);
  CHECK(comm.link.sized);
  CHECK(comm.link.latency == 50'000);
  // The fitted link explains the run's tasks better than one latency for every message (1F1B's
  // cost alone cannot tell: its critical path has as many messages each way, and the median
  // wait is their mean).
  CHECK(std::abs(fit.replay_cost_error) < 0.02);
  CostSpec latency_only = fit.costs;
  latency_only.link = {};
  const DiffReport sized = diff_measured(m, fit.costs, {.comm = with_cost_link({}, fit.costs)});
  const DiffReport plain = diff_measured(m, latency_only);
  // the README's figures: 0.042 ms against 0.205 ms
  CHECK(sized.start_error_mean_ms == Approx(0.042).margin(0.0005));
  CHECK(plain.start_error_mean_ms == Approx(0.205).margin(0.0005));
  // The replay on the measured durations sends each message by the fitted link too: it explains
  // the run's cost up to the trace's nanoseconds.
  CHECK(std::abs(sized.replay_cost_error) < 1e-5);
  // A --link that sizes messages wins over the file's; one that names only contention keeps it.
  CommOptions given;
  given.link = LinkModel{.sized = true, .latency = 7, .bandwidth = 1};
  CHECK(with_cost_link(given, back).link.latency == 7);
  CommOptions duplex;
  duplex.link.contention = Contention::Duplex;
  CHECK(with_cost_link(duplex, back).link.contention == Contention::Duplex);
  CHECK(with_cost_link(duplex, back).link.bandwidth == Approx(10).epsilon(1e-9));
}

TEST_CASE("a send's size is the calls its thread made inside it, however sends nest",
          "[run][measured]") {
  // Rank 0: F0 then F1, their sends; a send range that holds the other (a profiler's nesting),
  // a call on another thread and one just past the end; fp16 and fp32 sizes.
  const std::string t = R"({"distributedInfo":{"rank":0},"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"PP:0F0","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"X","cat":"user_annotation","name":"PP:0F1","pid":1,"tid":1,"ts":10,"dur":10},
    {"ph":"X","cat":"user_annotation","name":"PP:0SEND_F0","pid":1,"tid":1,"ts":20,"dur":30},
    {"ph":"X","cat":"user_annotation","name":"PP:0SEND_F1","pid":1,"tid":1,"ts":30,"dur":10},
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":20,"dur":1,"args":{"In msg nelems":1000,"Out msg nelems":1000,"dtype":"Half"}},
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":35,"dur":1,"args":{"In msg nelems":100,"Out msg nelems":100,"dtype":"Float"}},
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":2,"ts":35,"dur":1,"args":{"In msg nelems":7,"Out msg nelems":7,"dtype":"Float"}},
    {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":51,"dur":1,"args":{"In msg nelems":9,"Out msg nelems":9,"dtype":"Float"}},
    {"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv","pid":0,"tid":20,"ts":35,"dur":5,"args":{"In msg nelems":100,"Out msg nelems":100,"dtype":"Float"}}]})";
  const ImportedTrace tr = parse_traces({t}, {"trace.json"}, {});
  REQUIRE(tr.messages.size() == 2);
  CHECK(tr.messages[0] == MeasuredMessage{Kind::F, 0, 0, 2000 + 400});  // both calls inside it
  CHECK(tr.messages[1] == MeasuredMessage{Kind::F, 0, 1, 400});
}

TEST_CASE("the link is not fitted where the sizes cannot tell latency from bandwidth",
          "[run][measured]") {
  const Played pl = played("1f1b", 4, 8, "F=1,B=1,W=1,comm=0.1", 0.02);
  // no sizes at all
  const CostFit none = fit_costs(import_texts(kineto_ranks(pl.timeline), rank_names(4)));
  CHECK_FALSE(none.link.fitted);
  CHECK(none.link.samples == 0);
  CHECK_THAT(none.link.note, Catch::Contains("no message of known size"));
  CHECK_FALSE(none.costs.link.sized);
  // every message one size
  std::vector<std::string> texts;
  for (int r = 0; r < 4; ++r)
    texts.push_back(with_sends(kineto_trace(pl.timeline, r), pl.timeline, r,
                               [](const Task&) { return 2097152.0; }));
  const CostFit one = fit_costs(import_texts(texts, rank_names(4)));
  CHECK_FALSE(one.link.fitted);
  CHECK(one.link.sizes == 1);
  CHECK(one.link.samples > 0);
  CHECK_THAT(one.link.note, Catch::Contains("every message is 2.0 MiB") && Catch::Contains("cannot be told apart"));
  CHECK(one.comm_ms == Approx(0.1).margin(1e-9));
  // sizes that do not match the waits (larger messages arrive sooner): no link
  std::vector<std::string> backwards;
  for (int r = 0; r < 4; ++r)
    backwards.push_back(with_sends(kineto_trace(pl.timeline, r), pl.timeline, r,
                                   [](const Task& t) { return t.kind == Kind::F ? 1e6 : 4e6; }));
  const CostFit flat = fit_costs(import_texts(backwards, rank_names(4)));
  // every wait is the same 0.1 ms whatever the size: the line is flat
  CHECK_FALSE(flat.link.fitted);
  CHECK_THAT(flat.link.note, Catch::Contains("do not grow with the message size"));
  // a dtype nobody knows, or a size out of range, is no size: the send is not sized
  std::string odd = with_sends(kineto_trace(pl.timeline, 0), pl.timeline, 0, [](const Task&) { return 1e6; });
  for (std::size_t at = odd.find("\"Float\""); at != std::string::npos; at = odd.find("\"Float\""))
    odd.replace(at, 7, "\"Qubit\"");
  std::vector<std::string> odd_texts = kineto_ranks(pl.timeline);
  odd_texts[0] = odd;
  CHECK(parse_traces(odd_texts, rank_names(4), {}).messages.empty());
  std::string huge = with_sends(kineto_trace(pl.timeline, 0), pl.timeline, 0, [](const Task&) { return 1e6; });
  for (std::size_t at = huge.find("\"In msg nelems\":250000"); at != std::string::npos;
       at = huge.find("\"In msg nelems\":250000"))
    huge.replace(at, 22, "\"In msg nelems\":1e300");
  odd_texts[0] = huge;
  const ImportedTrace h = parse_traces(odd_texts, rank_names(4), {});
  for (const MeasuredMessage& msg : h.messages) CHECK(msg.bytes == 1e6);  // the Out size stands
}

TEST_CASE("a ppsim trace of a sized link imports its message sizes: the link comes back exactly",
          "[run][measured]") {
  const auto name = GENERATE(as<std::string>{}, "1f1b", "zb-h1", "interleaved-1f1b");
  CAPTURE(name);
  const Schedule s = make_schedule(name, {.devices = 4, .microbatches = 8});
  CommOptions comm;
  comm.link = LinkModel{.sized = true, .latency = 20'000, .bandwidth = 5};
  const Run r = run_schedule(s, parse_costs("F=2,B=2,W=2,act_bytes=1e6,grad_bytes=3e6"), comm);
  std::ostringstream trace;
  write_chrome_trace(trace, r);
  const MeasuredRun m = import_texts({trace.str()}, {"sim.json"});
  CHECK_FALSE(m.messages.empty());
  for (const MeasuredMessage& msg : m.messages) CHECK(msg.bytes == (msg.part == Kind::F ? 1e6 : 3e6));
  const CostFit fit = fit_costs(m);
  REQUIRE(fit.link.fitted);
  CHECK(fit.link.latency == 20'000);
  CHECK(fit.link.bandwidth == Approx(5).epsilon(1e-9));
  CHECK(fit.replay_cost_error == 0);
  const DiffReport d = diff_measured(m, fit.costs, {.comm = with_cost_link({}, fit.costs)});
  CHECK(d.cost_error == 0);
  CHECK(d.end_error_max_ms == 0);
}

TEST_CASE("the fitted cost file reads back and runs other schedules", "[run][measured]") {
  const Played pl = played("1f1b", 4, 8, "F=1,B=1,W=1,comm=0.1", 0.02);
  const MeasuredRun m = import_texts(kineto_ranks(pl.timeline), rank_names(4));
  const CostFit fit = fit_costs(m);
  const CostSpec back = parse_cost_json(fitted_costs_json(fit, m), "fitted.json");
  CHECK(back.stages == fit.costs.stages);
  CHECK(back.comm == fit.costs.comm);
  // "My measured run, with zb-v instead": the file feeds any schedule of these devices.
  const Run zbv = run_schedule(make_schedule("zb-v", {.devices = 4, .microbatches = 8}), back);
  const Run again = run_schedule(make_schedule("1f1b", {.devices = 4, .microbatches = 8}), back);
  CHECK(zbv.metrics.cost < again.metrics.cost);
}

TEST_CASE("a replay's message leaves when its sender is next inside MPI", "[run][measured]") {
  // 1F1B, p = 2, m = 2: device 0 runs F0 then F1 at once; device 1's F0 needs F0's activation.
  const Played pl = played("1f1b", 2, 2, "F=1,B=1,W=1", 0);
  const Schedule& s = pl.schedule;
  const CostModel memory = cost_model_for(CostSpec{}, s);
  ReplayComm comm;
  comm.latency = 100'000;
  const Run plain = replay_measured(s, pl.timeline, memory, comm);
  comm.sender_progress = true;
  const Run progress = replay_measured(s, pl.timeline, memory, comm);
  const auto start_of = [](const Run& r, const Task& t) {
    return r.timeline.runs[static_cast<std::size_t>(run_of(r.timeline, t))].start;
  };
  // Plainly: F0's end (1 ms) + the latency. With progress: the end of F1, which device 0 starts
  // at once (2 ms), + the latency.
  CHECK(start_of(plain, Task::make(Kind::F, 1, 0)) == 1'100'000);
  CHECK(start_of(progress, Task::make(Kind::F, 1, 0)) == 2'100'000);
  // Device 1 sends BW0's gradient and starts F1 at once: the gradient leaves at F1's end.
  const Ticks f1_end = progress.timeline.runs[static_cast<std::size_t>(run_of(progress.timeline, Task::make(Kind::F, 1, 1)))].end;
  CHECK(start_of(progress, Task::make(Kind::BW, 0, 0)) == f1_end + 100'000);
  // F1's activation left at once: device 0 idled after F1 (its BW0 was not ready).
  CHECK(start_of(progress, Task::make(Kind::F, 1, 1)) ==
        progress.timeline.runs[static_cast<std::size_t>(run_of(progress.timeline, Task::make(Kind::BW, 1, 0)))].end);
}
