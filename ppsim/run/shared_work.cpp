// Items over threads and ranks.
#include "ppsim/run/shared_work.hpp"

#include "ppsim/sim/cores.hpp"
#include "ppsim/sim/errors.hpp"

#include <algorithm>
#include <exception>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace ppsim {

namespace detail {

void ByteReader::fail() const {
  throw std::runtime_error(fmt::format("the results from {} are cut short or malformed", from_));
}

} // namespace detail

namespace {

// A rank's bytes: what it ran, or the error that stopped it.
constexpr std::uint8_t kResults = 1;
constexpr std::uint8_t kFailed = 2;
// The kinds of error a rank tells, so that every rank throws what one process would.
enum class ErrorKind : std::uint8_t { other, config, schedule, infeasible };

ErrorKind kind_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ConfigError&) {
    return ErrorKind::config;
  } catch (const ScheduleError&) {
    return ErrorKind::schedule;
  } catch (const InfeasibleError&) {
    return ErrorKind::infeasible;
  } catch (...) {
    return ErrorKind::other;
  }
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an unknown error";
  }
}

[[noreturn]] void throw_as(ErrorKind kind, const std::string& what) {
  switch (kind) {
  case ErrorKind::config: throw ConfigError(what);
  case ErrorKind::schedule: throw ScheduleError(what);
  case ErrorKind::infeasible: throw InfeasibleError(what);
  case ErrorKind::other: break;
  }
  throw std::runtime_error(what);
}

struct ItemError {
  std::size_t item = 0;
  std::exception_ptr error;
};

// Runs the items `mine` over `threads` threads; the lowest item's error, if any.
ItemError run_mine(const std::vector<std::size_t>& mine, unsigned threads,
                            const std::function<std::string(std::size_t)>& run,
                            std::vector<std::string>& out, Progress* progress,
                            std::string_view what) {
  std::size_t done = 0;
  std::mutex reporting;  // the counts reach `progress` in order: 1, 2, ... whatever finished
  std::vector<std::exception_ptr> errors(mine.size());
  const auto work = [&](std::size_t first, std::size_t step) {
    const WorkerScope worker;
    for (std::size_t k = first; k < mine.size(); k += step) {
      try {
        out[mine[k]] = run(mine[k]);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      const std::lock_guard lock(reporting);
      report(progress, what, ++done, mine.size());
    }
  };
  threads = std::clamp<unsigned>(threads, 1,
                                 static_cast<unsigned>(std::max<std::size_t>(1, mine.size())));
  if (threads == 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
    for (std::thread& t : pool) t.join();
  }
  for (std::size_t k = 0; k < mine.size(); ++k)
    if (errors[k]) return {mine[k], errors[k]};
  return {};
}

} // namespace

std::vector<std::string> share_work(std::size_t n, Workers workers,
                                    const std::function<std::string(std::size_t)>& run,
                                    Progress* progress, std::string_view what) {
  PointExchange* const ex = workers.exchange;
  const std::size_t ranks = ex != nullptr ? static_cast<std::size_t>(ex->ranks()) : 1;
  const std::size_t rank = ex != nullptr ? static_cast<std::size_t>(ex->rank()) : 0;
  const unsigned threads = workers.threads != 0 ? workers.threads : worker_cores();
  // Interleaved, so that each rank gets its share of every axis (the large p and m as well).
  std::vector<std::size_t> mine;
  for (std::size_t i = rank; i < n; i += ranks) mine.push_back(i);
  report(progress, what, 0, mine.size());
  std::vector<std::string> out(n);
  const auto [failed_item, error] = run_mine(mine, threads, run, out, progress, what);
  if (ranks == 1) {
    if (error) std::rethrow_exception(error);
    return out;
  }
  // Every rank reaches the exchange, also when its items failed, so that none waits forever.
  detail::ByteWriter blob;
  if (error) {
    blob.put(kFailed);
    blob.put(kind_of(error));
    blob.put(static_cast<std::uint64_t>(failed_item));
    blob.text(what_of(error));
  } else {
    blob.put(kResults);
    blob.put(static_cast<std::uint64_t>(mine.size()));
    for (const std::size_t i : mine) {
      blob.put(static_cast<std::uint64_t>(i));
      blob.text(out[i]);
    }
  }
  const std::vector<std::string> all = ex->all_gather(blob.take());
  if (all.size() != ranks)
    throw std::runtime_error(fmt::format("{} of {} ranks answered", all.size(), ranks));
  // Errors first, the lowest item's (what one process would throw): every rank throws it.
  struct Told {
    std::size_t rank;
    std::uint64_t item;
    ErrorKind kind;
    std::string what;
  };
  std::optional<Told> first;
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::string from = fmt::format("rank {}", r);
    detail::ByteReader in(all[r], from);
    if (all[r].empty() || static_cast<std::uint8_t>(all[r].front()) != kFailed) continue;
    (void)in.get<std::uint8_t>();
    const auto kind = in.get<ErrorKind>();
    const auto item = in.get<std::uint64_t>();
    if (kind > ErrorKind::infeasible || item >= n || item % ranks != r) in.fail();
    std::string told = in.text();
    in.finish();
    if (!first || item < first->item) first = Told{r, item, kind, std::move(told)};
  }
  if (first)
    throw_as(first->kind, first->rank == rank
                              ? first->what
                              : fmt::format("rank {}: {}", first->rank, first->what));
  std::vector<bool> arrived(n, false);  // each item once, from the rank it was given to
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r == rank) continue;
    const std::string from = fmt::format("rank {}", r);
    detail::ByteReader in(all[r], from);
    if (in.get<std::uint8_t>() != kResults) in.fail();
    const auto count = in.get<std::uint64_t>();
    const std::size_t expected = (n + ranks - r - 1) / ranks;
    if (count != expected)
      throw std::runtime_error(
          fmt::format("{} sent {} results, expected {}", from, count, expected));
    for (std::uint64_t k = 0; k < count; ++k) {
      const auto i = in.get<std::uint64_t>();
      if (i >= n || i % ranks != r || arrived[static_cast<std::size_t>(i)]) in.fail();
      arrived[static_cast<std::size_t>(i)] = true;
      out[static_cast<std::size_t>(i)] = in.text();
    }
    in.finish();
  }
  return out;
}

} // namespace ppsim
