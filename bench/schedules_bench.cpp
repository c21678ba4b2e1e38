// Benchmarks of schedule generation: the zero-bubble heuristic and zb-auto's search at p = 32,
// m = 256 (the authors' figures are for the same cases), ZB-V and V-Half/V-Min up to p = 32,
// m = 256, at unit costs and at a realistic profile with comm.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/detail/zb_greedy.hpp"
#include "ppsim/sim/cost_model.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

void generate(benchmark::State& state, const std::string& name, const char* costs_text,
              double limit_in_p = -1, int chunks = 0) {
  const ppsim::CostSpec costs = ppsim::parse_costs(costs_text);
  const int p = static_cast<int>(state.range(0));
  ppsim::ScheduleSpec spec{.devices = p, .microbatches = static_cast<int>(state.range(1)),
                           .chunks = chunks, .mem_limit = limit_in_p > 0 ? limit_in_p * p : -1};
  spec.costs = &costs;
  std::size_t tasks = 0;
  for (auto _ : state) {
    const ppsim::Schedule s = ppsim::make_schedule(name, spec);
    tasks = s.task_count();
    benchmark::DoNotOptimize(tasks);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

constexpr const char* kEven = "F=2,B=2,W=2";
constexpr const char* kUneven = "F=1.5,B=1.5,W=1,comm=0.15";

// The authors' heuristic alone: 8 flag combinations at one limit, as their initial_solution().
void heuristic(benchmark::State& state, const char* costs_text, double limit_in_p) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const ppsim::Schedule skeleton = ppsim::make_pipeline("zb", p, m, ppsim::loop_placement(p, 1));
  const ppsim::CostModel costs = ppsim::cost_model_for(ppsim::parse_costs(costs_text), skeleton);
  for (auto _ : state) {
    const ppsim::detail::ZbProblem problem(skeleton, costs);
    auto choice = ppsim::detail::zb_authors_choice(problem, limit_in_p * p);
    benchmark::DoNotOptimize(choice);
  }
}

void BM_ZbHeuristic2p(benchmark::State& state) { heuristic(state, kEven, 2); }
void BM_ZbHeuristic2pUneven(benchmark::State& state) { heuristic(state, kUneven, 2); }
void BM_Zb2p(benchmark::State& state) { generate(state, "zb-2p", kEven); }
void BM_Zb2pUneven(benchmark::State& state) { generate(state, "zb-2p", kUneven); }
void BM_Zb1pUneven(benchmark::State& state) { generate(state, "zb-1p", kUneven); }
void BM_ZbAuto3pUneven(benchmark::State& state) { generate(state, "zb-auto", kUneven, 3); }
void BM_ZbAutoUnevenMW2(benchmark::State& state) {
  generate(state, "zb-auto", "F=1.5,B=1.5,W=1,comm=0.15,MW=2");
}
void BM_ZbAutoChunks2(benchmark::State& state) { generate(state, "zb-auto", kUneven, 1, 2); }

// What `ppsim sweep -s zb-auto --mem-limit 1p,1.125p,...,3p` generates: 17 limits.
void BM_ZbAutoSweep17(benchmark::State& state) {
  const ppsim::CostSpec costs = ppsim::parse_costs(kUneven);
  const int p = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int eighths = 8; eighths <= 24; ++eighths) {
      ppsim::ScheduleSpec spec{.devices = p, .microbatches = static_cast<int>(state.range(1)),
                               .mem_limit = p * eighths / 8.0};
      spec.costs = &costs;
      const ppsim::Schedule s = ppsim::make_schedule("zb-auto", spec);
      benchmark::DoNotOptimize(s.order.data());
    }
  }
}

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

BENCHMARK(BM_ZbHeuristic2p)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbHeuristic2pUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Zb2p)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Zb2pUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Zb1pUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAuto3pUneven)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAutoUnevenMW2)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAutoChunks2)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbAutoSweep17)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbV)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic)->Args({4, 8})->Args({16, 48})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic2p)->Args({16, 48})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZbVRealistic3p)->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VHalf)->Args({8, 64})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VHalfRealistic)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VMinRealistic)->Args({4, 8})->Args({32, 256})->Unit(benchmark::kMillisecond);
