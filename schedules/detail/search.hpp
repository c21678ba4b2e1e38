// Private machinery of the automatic schedulers: candidates scored by (cost, sum of spans), and
// an evaluation of independent candidates over the machine's cores whose result does not depend
// on the thread count.
#pragma once

#include "sim/schedule.hpp"
#include "sim/time.hpp"

#include <algorithm>
#include <compare>
#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

namespace ppsim::detail {

/// What a candidate is judged by: the paper's cost (max span), then the sum of the devices'
/// spans (less idle overall), then its index among the candidates (the first wins a tie).
struct Score {
  Ticks cost{0};
  Ticks spans{0};
  friend auto operator<=>(const Score&, const Score&) = default;
};

/// A candidate schedule with its score; `schedule` is empty when the candidate failed.
struct Candidate {
  std::optional<Schedule> schedule;
  Score score;
};

/// Threads for independent work: the hardware's, at most `jobs`, at least 1.
[[nodiscard]] inline unsigned search_threads(std::size_t jobs) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<std::size_t>(jobs, 1, hw));
}

/// Runs fn(i) for i in [0, n) on up to search_threads(n) threads and returns the best candidate
/// by (score, i): the same whatever the thread count, since every candidate is computed and the
/// choice is made after all of them, in index order. nullopt when every candidate failed.
/// fn must not throw (a failed candidate returns an empty schedule).
template <class Fn> [[nodiscard]] std::optional<Candidate> best_candidate(std::size_t n, Fn&& fn) {
  std::vector<Candidate> results(n);
  const unsigned threads = search_threads(n);
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) results[i] = fn(i);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t i = t; i < n; i += threads) results[i] = fn(i);
      });
    for (auto& th : pool) th.join();
  }
  std::optional<Candidate> best;
  for (Candidate& c : results)
    if (c.schedule && (!best || c.score < best->score)) best = std::move(c);
  return best;
}

} // namespace ppsim::detail
