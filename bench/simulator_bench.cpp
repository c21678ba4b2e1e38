// Simulator throughput: tasks per second for ZB-H1 at p = 64, m = 4096 and p = 8, m = 64,
// for the engine alone (a fresh timeline per call, and a Simulator reusing its memory) and for
// the whole `ppsim simulate` path (generate, validate, simulate, measure, report) in-process.
#include "cli/cli.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"

#include <benchmark/benchmark.h>
#include <sstream>

using namespace ppsim;

namespace {

void BM_simulate(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Schedule s = make_schedule("zb-h1", {.devices = p, .microbatches = m});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.01"), s);
  for (auto _ : state) {
    Timeline t = simulate(s, c);
    benchmark::DoNotOptimize(t.runs.data());
  }
  state.counters["tasks"] = static_cast<double>(s.task_count());
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(s.task_count()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_simulate)->Args({8, 64})->Args({64, 4096})->Unit(benchmark::kMillisecond);

// The engine reusing its working memory and the timeline's (Simulator): what repeated
// simulations (samples, searches) pay per task once the first run has touched the pages.
void BM_simulate_reused(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Schedule s = make_schedule("zb-h1", {.devices = p, .microbatches = m});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.01"), s);
  Simulator sim;
  Timeline t;
  for (auto _ : state) {
    sim.run(s, c, {}, t);
    benchmark::DoNotOptimize(t.runs.data());
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(s.task_count()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_simulate_reused)->Args({8, 64})->Args({64, 4096})->Unit(benchmark::kMillisecond);

// DualPipeV's cells built from sub-operations (--overlap): every stage's F and BW a chain of
// 48 layers' compute and all-to-alls; the cells are made once per cost model, then an FB costs
// a lookup. Against the same run with scalar FB cells (the arg 0).
void BM_simulate_cells(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Schedule s = make_schedule("dualpipe-v", {.devices = p, .microbatches = m});
  CostSpec spec = parse_costs("F=2,B=2,W=1,comm=0.01");
  if (state.range(2) != 0) {
    StageCosts& st = spec.stages[0];
    for (int layer = 0; layer < 48; ++layer) {
      st.F_ops.insert(st.F_ops.end(), {{1.0 / 192, false}, {1.0 / 192, true}, {1.0 / 192, false}, {1.0 / 192, true}});
      st.B_ops.insert(st.B_ops.end(), {{1.0 / 192, true}, {1.0 / 192, false}, {1.0 / 192, true}, {1.0 / 192, false}});
      st.BW_ops.insert(st.BW_ops.end(), {{1.0 / 288, true}, {1.0 / 288, false}, {1.0 / 288, true}, {1.0 / 288, false}, {2.0 / 288, false}});
    }
  }
  for (auto _ : state) {
    const CostModel c = cost_model_for(spec, s);
    Timeline t = simulate(s, c);
    benchmark::DoNotOptimize(t.runs.data());
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(s.task_count()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_simulate_cells)
    ->Args({8, 64, 0})
    ->Args({8, 64, 1})
    ->Args({64, 4096, 0})
    ->Args({64, 4096, 1})
    ->Unit(benchmark::kMillisecond);

// The engine with activation offload: half of every activation to the host and back on each
// device's copy stream (ppsim/sim/offload.hpp), the copies as long as a tenth of a task.
void BM_simulate_offload(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Schedule s = make_schedule("zb-h1", {.devices = p, .microbatches = m});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.01"), s);
  SimOptions o;
  o.offload.fraction.assign(static_cast<std::size_t>(s.stages()), 0.5);
  o.offload.ns_per_unit = 2e5;
  for (auto _ : state) {
    Timeline t = simulate(s, c, o);
    benchmark::DoNotOptimize(t.runs.data());
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(s.task_count()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_simulate_offload)->Args({8, 64})->Args({64, 4096})->Unit(benchmark::kMillisecond);

void BM_generate_validate_simulate_measure(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const CostSpec costs = parse_costs("F=1,B=1,W=1,comm=0.01");
  std::size_t tasks = 0;
  for (auto _ : state) {
    Run r = run_schedule(make_schedule("zb-h1", {.devices = p, .microbatches = m}), costs);
    tasks = r.schedule.task_count();
    benchmark::DoNotOptimize(r.metrics.cost);
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(tasks) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_generate_validate_simulate_measure)
    ->Args({8, 64})
    ->Args({64, 4096})
    ->Unit(benchmark::kMillisecond);

void BM_cli_simulate_json(benchmark::State& state) {
  const std::vector<std::string> args = {"simulate", "-s", "zb-h1", "-p", "64", "-m", "4096",
                                         "--costs", "F=1,B=1,W=1,comm=0.01", "--json"};
  for (auto _ : state) {
    std::ostringstream out, err;
    const int rc = run_cli(args, out, err);
    if (rc != 0) state.SkipWithError("run_cli failed");
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      64.0 * 4096 * 3 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_cli_simulate_json)->Unit(benchmark::kMillisecond);

} // namespace
