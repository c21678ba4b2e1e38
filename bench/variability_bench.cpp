// Noisy durations: 1,000 jittered samples of ZB-H1 at p = 8, m = 32 (issue 12's figure), on one
// thread and on the hardware's, and per sample with blocking sends and duplex contention.
#include "ppsim/io/cost_file.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/variability.hpp"

#include <benchmark/benchmark.h>

using namespace ppsim;

namespace {

void BM_jitter_samples(benchmark::State& state) {
  const Schedule s = make_schedule("zb-h1", {.devices = 8, .microbatches = 32});
  const CostModel c = cost_model_for(parse_costs("F=1,B=1,W=1,comm=0.05"), s);
  JitterOptions o;
  o.cv = 0.1;
  o.seed = 1;
  o.samples = 1000;
  o.threads = static_cast<unsigned>(state.range(0));  // 0 = the hardware's
  CommOptions comm;
  if (state.range(1) != 0) {
    comm.mode = CommMode::Blocking;
    comm.link.contention = Contention::Duplex;
  }
  for (auto _ : state) {
    const SampleSummary r = sample_run(s, c, comm, {}, o);
    benchmark::DoNotOptimize(r.cost_ms.mean);
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(1000.0 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["tasks_per_s"] = benchmark::Counter(
      1000.0 * static_cast<double>(s.task_count()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
// Args: threads (0 = hardware), blocking + duplex (0/1).
BENCHMARK(BM_jitter_samples)
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

} // namespace
