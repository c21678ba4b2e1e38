// Progress of long work (sweeps, plans, calibration), told to whoever shows it.
#pragma once

#include <cstddef>
#include <string_view>

namespace ppsim {

/// What long-running library code tells its caller while it works: `done` of `total` units
/// of `what` (`"points"`, `"candidates"`) are finished. The library never prints; the command
/// line decides whether and where to show it (cli/progress.hpp: stderr, on a terminal only).
/// Implementations accept calls from several threads at once (plan evaluates on all cores).
///
///   void run_all(std::span<const Job> jobs, Progress* progress) {
///     for (std::size_t i = 0; i < jobs.size(); ++i) { run(jobs[i]); report(progress, "jobs", i + 1, jobs.size()); }
///   }
class Progress {
public:
  virtual ~Progress() = default;
  virtual void step(std::string_view what, std::size_t done, std::size_t total) = 0;
};

/// progress->step(...) when there is someone to tell.
inline void report(Progress* progress, std::string_view what, std::size_t done,
                   std::size_t total) {
  if (progress != nullptr) progress->step(what, done, total);
}

} // namespace ppsim
