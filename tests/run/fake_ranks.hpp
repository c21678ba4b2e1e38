// Ranks as threads of one test process (PointExchange without MPI), and a scripted peer.
#pragma once

#include "ppsim/run/shared_work.hpp"

#include <barrier>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ppsim::test {

/// The exchange the ranks of `run_on_thread_ranks` share: all_gather hands every rank's bytes
/// to every rank.
class ThreadRanks {
public:
  explicit ThreadRanks(int n) : slots_(static_cast<std::size_t>(n)), sync_(n) {}

  class Rank final : public PointExchange {
  public:
    Rank(ThreadRanks& all, int rank) : all_(all), rank_(rank) {}
    [[nodiscard]] int rank() const override { return rank_; }
    [[nodiscard]] int ranks() const override { return static_cast<int>(all_.slots_.size()); }
    [[nodiscard]] std::vector<std::string> all_gather(const std::string& mine) override {
      all_.slots_[static_cast<std::size_t>(rank_)] = mine;
      all_.sync_.arrive_and_wait();
      std::vector<std::string> every = all_.slots_;
      all_.sync_.arrive_and_wait();  // nobody writes its slot again before all have read
      return every;
    }

  private:
    ThreadRanks& all_;
    int rank_;
  };

private:
  std::vector<std::string> slots_;
  std::barrier<> sync_;
};

/// Runs `body(exchange)` on `n` threads, one per rank; each rank's result, in rank order.
template <typename Result>
std::vector<Result> run_on_thread_ranks(int n, const std::function<Result(PointExchange&)>& body) {
  ThreadRanks shared(n);
  std::vector<Result> got(static_cast<std::size_t>(n));
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      ThreadRanks::Rank ex(shared, r);
      got[static_cast<std::size_t>(r)] = body(ex);
    });
  for (std::thread& t : ranks) t.join();
  return got;
}

/// Rank 0 of two, whose rank 1 sends `theirs`.
class ScriptedPeer final : public PointExchange {
public:
  explicit ScriptedPeer(std::string theirs) : theirs_(std::move(theirs)) {}
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int ranks() const override { return 2; }
  [[nodiscard]] std::vector<std::string> all_gather(const std::string& mine) override {
    return {mine, theirs_};
  }

private:
  std::string theirs_;
};

} // namespace ppsim::test
