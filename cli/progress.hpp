// The progress line on stderr: for work over a second, only when stderr is a terminal.
#pragma once

#include "ppsim/sim/progress.hpp"

#include <condition_variable>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <thread>

namespace ppsim::cli {

/// Shows how far a command is, on one line of stderr that it redraws (`\r`) and clears at the
/// end: `ppsim: sweep: 12/40 points, 3.2 s`. Nothing is drawn unless stderr is a terminal, and
/// nothing before the command has run for kDelay seconds, so quick commands, tests and pipes
/// never see it. Library code reports through the Progress interface; a ticker thread redraws
/// the elapsed time of work that reports nothing (one long search).
///
///   ProgressReporter progress(std::cerr, isatty(STDERR_FILENO) == 1);
///   progress.start("sweep");  ...  run_sweep(grid, base, &progress);  progress.finish();
class ProgressReporter final : public Progress {
public:
  /// Seconds on a monotonic clock; tests pass a fake one.
  using Clock = std::function<double()>;
  static constexpr double kDelay = 1.0;      ///< seconds before the first line
  static constexpr double kInterval = 0.25;  ///< seconds between redraws

  /// `terminal`: whether `err` is a terminal (isatty); without it the reporter stays silent.
  /// `clock`: empty = std::chrono::steady_clock.
  ProgressReporter(std::ostream& err, bool terminal, Clock clock = {});
  ~ProgressReporter() override;
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// The command starts: its name heads the line and the delay counts from now. With
  /// `ticker`, a thread redraws every kInterval (on a terminal only).
  void start(std::string_view command, bool ticker = false);
  void step(std::string_view what, std::size_t done, std::size_t total) override;
  /// Redraws when due (the ticker calls it; tests call it with their clock).
  void tick();
  /// Stops the ticker and clears the line if one was drawn. Call it before printing results;
  /// calling it again does nothing.
  void finish();
  /// Whether a line has been drawn since start (for tests).
  [[nodiscard]] bool drawn() const;

private:
  void draw_locked(double now);

  std::ostream& err_;
  const bool terminal_;
  Clock clock_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool running_{false};
  bool stop_{false};
  std::string command_;
  std::string what_;
  std::size_t done_{0}, total_{0};
  double started_{0};
  double last_draw_{-1};
  std::size_t width_{0};  ///< characters of the line on screen
  bool drawn_{false};
};

} // namespace ppsim::cli
