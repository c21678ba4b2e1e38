// The progress line on stderr (see progress.hpp).
#include "cli/progress.hpp"

#include <chrono>
#include <fmt/format.h>
#include <ostream>

namespace ppsim::cli {

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

ProgressReporter::ProgressReporter(std::ostream& err, bool terminal, Clock clock)
    : err_(err), terminal_(terminal), clock_(clock ? std::move(clock) : Clock(steady_seconds)) {}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::start(std::string_view command, bool ticker) {
  finish();
  if (!terminal_) return;
  std::lock_guard lock(mutex_);
  command_ = command;
  what_.clear();
  done_ = total_ = 0;
  started_ = clock_();
  last_draw_ = -1;
  drawn_ = false;
  running_ = true;
  stop_ = false;
  if (ticker)
    ticker_ = std::thread([this] {
      std::unique_lock lk(mutex_);
      while (!stop_) {
        wake_.wait_for(lk, std::chrono::duration<double>(kInterval));
        if (!stop_) draw_locked(clock_());
      }
    });
}

void ProgressReporter::step(std::string_view what, std::size_t done, std::size_t total) {
  if (!terminal_) return;
  std::lock_guard lock(mutex_);
  if (!running_) return;
  what_ = what;
  done_ = done;
  total_ = total;
  draw_locked(clock_());
}

void ProgressReporter::tick() {
  if (!terminal_) return;
  std::lock_guard lock(mutex_);
  draw_locked(clock_());
}

void ProgressReporter::draw_locked(double now) {
  if (!running_ || now - started_ < kDelay) return;
  if (last_draw_ >= 0 && now - last_draw_ < kInterval) return;
  last_draw_ = now;
  std::string line = fmt::format("ppsim: {}: ", command_);
  if (total_ > 0) line += fmt::format("{}/{} {}, ", done_, total_, what_);
  line += fmt::format("{:.1f} s", now - started_);
  // Pad over the rest of a longer line before it; \r returns to the line's start.
  const std::size_t width = line.size();
  if (width < width_) line.append(width_ - width, ' ');
  width_ = width;
  err_ << '\r' << line << std::flush;
  drawn_ = true;
}

void ProgressReporter::finish() {
  std::thread ticker;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    ticker.swap(ticker_);
  }
  wake_.notify_all();
  if (ticker.joinable()) ticker.join();
  std::lock_guard lock(mutex_);
  if (!running_) return;
  running_ = false;
  if (drawn_) err_ << '\r' << std::string(width_, ' ') << '\r' << std::flush;
  width_ = 0;
}

bool ProgressReporter::drawn() const {
  std::lock_guard lock(mutex_);
  return drawn_;
}

} // namespace ppsim::cli
