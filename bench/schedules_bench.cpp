// Benchmarks of schedule generation: the automatic zero-bubble search and ZB-V at p = 32, m = 256.
#include "schedules/registry.hpp"
#include "sim/cost_model.hpp"
#include "io/cost_file.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

void generate(benchmark::State& state, const std::string& name, const char* costs_text) {
  const ppsim::CostSpec costs = ppsim::parse_costs(costs_text);
  ppsim::ScheduleSpec spec{.devices = static_cast<int>(state.range(0)),
                           .microbatches = static_cast<int>(state.range(1))};
  spec.costs = &costs;
  std::size_t tasks = 0;
  for (auto _ : state) {
    const ppsim::Schedule s = ppsim::make_schedule(name, spec);
    tasks = s.task_count();
    benchmark::DoNotOptimize(tasks);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

void BM_ZbAuto(benchmark::State& state) { generate(state, "zb-auto", "F=1,B=1,W=1"); }
void BM_ZbAutoUneven(benchmark::State& state) { generate(state, "zb-auto", "F=1,B=2,W=1,comm=0.1"); }
void BM_ZbV(benchmark::State& state) { generate(state, "zb-v", "F=1,B=1,W=1"); }
void BM_VHalf(benchmark::State& state) { generate(state, "v-half", "F=1,B=1,W=1"); }

} // namespace

BENCHMARK(BM_ZbAuto)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAutoUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbV)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VHalf)->Args({8, 64})->Unit(benchmark::kMillisecond);
