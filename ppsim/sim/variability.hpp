// Noisy task durations: K samples of a run under lognormal jitter, and the distribution of
// their cost and iteration time.
#pragma once

#include "ppsim/sim/comm.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace ppsim {

/// `--jitter CV --seed N --samples K`. Each sample multiplies every task's duration by its own
/// lognormal factor of mean 1 and coefficient of variation `cv` (sigma^2 = ln(1 + cv^2),
/// mu = -sigma^2 / 2), rounded to the nanosecond. A factor is a function of (seed, sample,
/// task) only: sample k gives a task the same duration in every schedule that runs it, on any
/// thread, in any order (common random numbers, so compare's samples are the same for all).
struct JitterOptions {
  double cv{0};
  std::uint64_t seed{1};
  int samples{0};       ///< 0 = no sampling
  unsigned threads{0};  ///< 0 = the hardware's; the result is the same for any count

  [[nodiscard]] bool requested() const { return samples > 0; }
  friend bool operator==(const JitterOptions&, const JitterOptions&) = default;
};

/// Throws ConfigError for a CV outside [0, limits::kMaxJitterCv] (or not finite) or a sample
/// count outside 1..limits::kMaxSamples, naming the value.
void check_jitter(const JitterOptions& options);

/// The factor of task `t` in sample `sample` (exactly 1 when cv is 0).
[[nodiscard]] double jitter_factor(double cv, std::uint64_t seed, int sample, const Task& t);

/// Mean, nearest-rank percentiles (the ceil(q K)-th smallest) and range, in ms.
struct Distribution {
  double mean{0}, p50{0}, p90{0}, p99{0}, min{0}, max{0};
};
[[nodiscard]] Distribution distribution_ms(const std::vector<Ticks>& values);

/// What K samples of a run gave.
struct SampleSummary {
  int count{0};
  std::uint64_t seed{0};
  double cv{0};
  std::vector<Ticks> cost;            ///< per sample: the cost (max span) of one iteration
  std::vector<Ticks> iteration_time;  ///< per sample, with iterations: the steady-state step
  Distribution cost_ms;
  std::optional<Distribution> iteration_time_ms;
  /// Set by a comparison: in how many samples this schedule's cost was the lowest of all the
  /// schedules compared (a tie counts for each tied schedule).
  std::optional<int> wins;
};

/// Simulates `options.samples` noisy copies of one iteration of `schedule` under `costs` and
/// `comm` (and, when `iterations` asks for more than one plain iteration, of the K-fold run
/// too, for the iteration time). Throws ConfigError for bad options or when samples x tasks
/// exceed limits::kMaxSampledTasks, before simulating anything.
///
///   SampleSummary s = sample_run(schedule, costs, {}, {}, {.cv = 0.1, .seed = 7, .samples = 1000});
[[nodiscard]] SampleSummary sample_run(const Schedule& schedule, const CostModel& costs,
                                       const CommOptions& comm, const IterationOptions& iterations,
                                       const JitterOptions& options);

/// Sets each summary's `wins` over the same samples (all summaries must have the same count).
void count_wins(const std::vector<SampleSummary*>& summaries);

} // namespace ppsim
