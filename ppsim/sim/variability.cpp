// Sampling noisy task durations: counter-based lognormal factors, samples over threads, the
// distribution of the results.
#include "ppsim/sim/variability.hpp"

#include "ppsim/sim/cores.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <fmt/format.h>
#include <numbers>
#include <thread>

namespace ppsim {

namespace {

// SplitMix64's finaliser: a bijection of 64-bit words whose outputs pass as independent.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A task's identity as one word (kind, stage, micro-batch, and FB's second half).
std::uint64_t task_key(const Task& t) {
  std::uint64_t k = mix(static_cast<std::uint64_t>(t.kind));
  k = mix(k ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.stage)));
  k = mix(k ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.microbatch)));
  if (t.kind == Kind::FB) {
    k = mix(k ^ static_cast<std::uint64_t>(t.kind2));
    k = mix(k ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.stage2)));
    k = mix(k ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(t.microbatch2)));
  }
  return k;
}

// A uniform number in (0, 1] from the top 53 bits of a word.
double unit_open(std::uint64_t w) { return static_cast<double>((w >> 11) + 1) * 0x1.0p-53; }

// The cost (max span) of a timeline, as measure() computes it.
Ticks cost_of(const Timeline& tl) {
  Ticks cost = 0;
  for (int d = 0; d < tl.devices; ++d) {
    const auto runs = tl.device_runs(d);
    if (!runs.empty()) cost = std::max(cost, runs.back().end - runs.front().start);
  }
  return cost;
}

// One thread's engine and buffers.
struct Sampler {
  Simulator sim;
  Timeline timeline;
  SimOptions options;
  std::vector<Ticks> ends;
};

// The noisy durations of every run of `s` (in Timeline order: device by device) in sample k.
void sample_durations(const Schedule& s, const CostModel& costs, const JitterOptions& o, int k,
                      std::vector<Ticks>& out) {
  out.clear();
  for (const auto& tasks : s.order)
    for (const Task& t : tasks) {
      const Ticks base = costs.duration(t);
      const double v = std::round(static_cast<double>(base) * jitter_factor(o.cv, o.seed, k, t));
      if (!(v < 9.2e18)) throw_time_overflow();
      out.push_back(static_cast<Ticks>(v));
    }
}

} // namespace

void check_jitter(const JitterOptions& o) {
  if (!std::isfinite(o.cv) || o.cv < 0 || o.cv > limits::kMaxJitterCv)
    throw ConfigError(fmt::format("--jitter {}: the coefficient of variation must be in 0..{:g}",
                                  o.cv, limits::kMaxJitterCv));
  if (o.samples < 1 || o.samples > limits::kMaxSamples)
    throw ConfigError(fmt::format("--samples {}: must be in 1..{}", o.samples, limits::kMaxSamples));
}

double jitter_factor(double cv, std::uint64_t seed, int sample, const Task& t) {
  if (cv == 0) return 1.0;
  const double var = std::log1p(cv * cv);  // sigma^2 of the underlying normal
  const std::uint64_t salt = 0x5eed, lane = 0x51;
  const auto k = static_cast<std::uint64_t>(static_cast<std::uint32_t>(sample));
  const std::uint64_t h = mix(mix(seed ^ salt) ^ mix(k + lane)) ^ task_key(t);
  // Box-Muller on two independent uniforms of this (seed, sample, task).
  const std::uint64_t other = 0xa5a5a5a5a5a5a5a5;
  const double u1 = unit_open(mix(h)), u2 = unit_open(mix(h ^ other));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return std::exp(std::sqrt(var) * z - var / 2);
}

Distribution distribution_ms(const std::vector<Ticks>& values) {
  Distribution d;
  if (values.empty()) return d;
  std::vector<Ticks> v = values;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const auto rank = [&](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return ticks_to_ms(v[std::clamp<std::size_t>(r, 1, n) - 1]);
  };
  long double sum = 0;
  for (Ticks t : v) sum += static_cast<long double>(t);
  d.mean = static_cast<double>(sum / static_cast<long double>(n)) / static_cast<double>(kTicksPerMs);
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p99 = rank(0.99);
  d.min = ticks_to_ms(v.front());
  d.max = ticks_to_ms(v.back());
  return d;
}

SampleSummary sample_run(const Schedule& s, const CostModel& costs, const CommOptions& comm,
                         const IterationOptions& iterations, const JitterOptions& o) {
  check_jitter(o);
  check_comm_options(comm);
  const bool repeated = iterations.requested();
  if (repeated) check_iterations(iterations, s);
  long long tasks = 0;
  for (const auto& t : s.order) tasks += static_cast<long long>(t.size());
  const long long per_sample = tasks * (repeated ? 1 + iterations.count : 1);
  if (static_cast<double>(per_sample) * o.samples > static_cast<double>(limits::kMaxSampledTasks))
    throw ConfigError(fmt::format(
        "--samples {}: {} samples of {} task runs each are more than {} in all", o.samples,
        o.samples, per_sample, limits::kMaxSampledTasks));

  SampleSummary out;
  out.count = o.samples;
  out.seed = o.seed;
  out.cv = o.cv;
  out.cost.assign(ix(o.samples), 0);
  if (repeated) out.iteration_time.assign(ix(o.samples), 0);
  const Schedule k_fold = repeated ? repeat_schedule(s, iterations.count) : Schedule{};
  const SimOptions k_fold_options = repeated ? iteration_sim_options(s, iterations) : SimOptions{};

  // Samples in contiguous blocks, one per thread; each sample depends only on its index.
  const unsigned hw = worker_cores();
  const unsigned threads = static_cast<unsigned>(
      std::clamp<long long>(o.threads > 0 ? o.threads : hw, 1, o.samples));
  std::vector<std::exception_ptr> errors(threads);
  const auto work = [&](unsigned w) {
    try {
      Sampler one;
      one.options.comm = comm;
      Sampler many;
      if (repeated) {
        many.options = k_fold_options;
        many.options.comm = comm;
      }
      const int begin = static_cast<int>(static_cast<long long>(o.samples) * w / threads);
      const int end = static_cast<int>(static_cast<long long>(o.samples) * (w + 1) / threads);
      for (int k = begin; k < end; ++k) {
        sample_durations(s, costs, o, k, one.options.durations);
        one.sim.run(s, costs, one.options, one.timeline);
        out.cost[ix(k)] = cost_of(one.timeline);
        if (repeated) {
          sample_durations(k_fold, costs, o, k, many.options.durations);
          many.sim.run(k_fold, costs, many.options, many.timeline);
          out.iteration_time[ix(k)] = iteration_ends(many.timeline, iterations, many.ends);
        }
      }
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned w = 0; w < threads; ++w) pool.emplace_back(work, w);
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  out.cost_ms = distribution_ms(out.cost);
  if (repeated) out.iteration_time_ms = distribution_ms(out.iteration_time);
  return out;
}

void count_wins(const std::vector<SampleSummary*>& summaries) {
  if (summaries.empty()) return;
  const int n = summaries.front()->count;
  for (SampleSummary* s : summaries) {
    if (s->count != n) throw ConfigError("compare: schedules sampled with different counts");
    s->wins = 0;
  }
  for (int k = 0; k < n; ++k) {
    Ticks best = summaries.front()->cost[ix(k)];
    for (const SampleSummary* s : summaries) best = std::min(best, s->cost[ix(k)]);
    for (SampleSummary* s : summaries)
      if (s->cost[ix(k)] == best) ++*s->wins;
  }
}

} // namespace ppsim
