// Benchmarks of schedule generation: the automatic zero-bubble search, ZB-V and V-Half/V-Min up
// to p = 32, m = 256, at unit costs and at a realistic profile with comm.
#include "schedules/registry.hpp"
#include "sim/cost_model.hpp"
#include "io/cost_file.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

void generate(benchmark::State& state, const std::string& name, const char* costs_text,
              double limit_in_p = -1) {
  const ppsim::CostSpec costs = ppsim::parse_costs(costs_text);
  ppsim::ScheduleSpec spec{.devices = static_cast<int>(state.range(0)),
                           .microbatches = static_cast<int>(state.range(1))};
  if (limit_in_p > 0) spec.mem_limit = limit_in_p * spec.devices;
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
// the realistic profile: F = B = 1.5 W per chunk, comm 0.1 F
constexpr const char* kRealistic = "F=3,B=3,W=2,comm=0.15";
void BM_ZbVRealistic(benchmark::State& state) { generate(state, "zb-v", kRealistic); }
void BM_ZbVRealistic2p(benchmark::State& state) { generate(state, "zb-v", kRealistic, 2); }
void BM_ZbVRealistic3p(benchmark::State& state) { generate(state, "zb-v", kRealistic, 3); }
void BM_VHalf(benchmark::State& state) { generate(state, "v-half", "F=1,B=1,W=1"); }
void BM_VHalfRealistic(benchmark::State& state) { generate(state, "v-half", kRealistic); }
void BM_VMinRealistic(benchmark::State& state) { generate(state, "v-min", kRealistic); }

} // namespace

BENCHMARK(BM_ZbAuto)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAutoUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbV)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic)->Args({4, 8})->Args({16, 48})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic2p)->Args({16, 48})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic3p)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VHalf)->Args({8, 64})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VHalfRealistic)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VMinRealistic)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
