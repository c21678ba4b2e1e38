// Independent, deterministic work items (a sweep's points, a plan's candidates) spread over the
// threads of this process and over the processes of a distributed run (`mpirun -np N ppsim
// sweep|plan ...`). Every item's result travels as bytes, so whatever the threads and ranks each
// result is the one a single thread computes.
//
//   const auto bytes = share_work(points.size(), {.threads = 0, .exchange = &ex},
//                                 [&](std::size_t i) { return encode(run(points[i])); }, progress);
//   // bytes[i]: item i's result, on every rank
#pragma once

#include "ppsim/sim/progress.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ppsim {

/// The processes of a distributed run that share the items: rank r runs the items i with
/// i % ranks == r. Over MPI in exec/ (exec/point_exchange.hpp); the library knows no MPI.
class PointExchange {
public:
  virtual ~PointExchange() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int ranks() const = 0;
  /// Collective (every rank calls it once, with its own bytes): every rank's bytes, in rank
  /// order, on every rank.
  [[nodiscard]] virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

/// Where the items run.
struct Workers {
  unsigned threads{1};  ///< threads of this process; 0 = one per usable core (worker_cores())
  PointExchange* exchange{nullptr};  ///< several processes share the items; nullptr = one
};

/// Runs `run(i)` for each item i < n of this rank over its threads (each a WorkerScope, so
/// that a search inside starts no pool of its own) and returns every item's bytes on every
/// rank. Each finished item of this rank is reported to `progress` (`what`), in order. An
/// error `run` throws is rethrown once every thread (and with an exchange, every rank) is done:
/// the lowest item's, as the same kind of ppsim error (ConfigError, ScheduleError,
/// InfeasibleError, else std::runtime_error) on every rank, naming the rank it came from.
/// std::runtime_error, naming the rank, when a rank's bytes are not its items.
[[nodiscard]] std::vector<std::string> share_work(std::size_t n, Workers workers,
                                                  const std::function<std::string(std::size_t)>& run,
                                                  Progress* progress, std::string_view what);

namespace detail {

/// Plain values and texts appended as bytes (the same build reads them back: doubles travel
/// as their bits).
class ByteWriter {
public:
  template <typename T> void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void text(std::string_view t) {
    put(static_cast<std::uint64_t>(t.size()));
    bytes_ += t;
  }
  [[nodiscard]] std::string take() { return std::move(bytes_); }

private:
  std::string bytes_;
};

/// Reads a ByteWriter's bytes back; std::runtime_error naming `from` when they end early.
class ByteReader {
public:
  ByteReader(std::string_view bytes, std::string_view from) : bytes_(bytes), from_(from) {}
  template <typename T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() < sizeof(T)) fail();
    T value;
    std::memcpy(&value, bytes_.data(), sizeof(T));
    bytes_.remove_prefix(sizeof(T));
    return value;
  }
  std::string text() {
    const auto n = get<std::uint64_t>();
    if (bytes_.size() < n) fail();
    std::string t(bytes_.substr(0, n));
    bytes_.remove_prefix(n);
    return t;
  }
  [[nodiscard]] bool done() const { return bytes_.empty(); }
  /// Fails unless every byte was read.
  void finish() const {
    if (!done()) fail();
  }
  [[noreturn]] void fail() const;

private:
  std::string_view bytes_;
  std::string_view from_;
};

} // namespace detail

} // namespace ppsim
