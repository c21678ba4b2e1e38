// A deadline for every connection of `ppsim serve`: a client must send each request, and take
// each answer, within a number of seconds of its connection's start or its last answer; time
// the server spends in a handler (a simulation) does not count. Past the deadline the socket is
// shut down, which ends the read or write the connection thread waits in.
//
// httplib 0.11 reads a request with one timeout per read, so a client that sends a byte just
// before each timeout held a thread for as long as it kept sending; and it gives a task queue
// only the job, not the socket. The watch finds the socket itself: on the accepting thread,
// right after the accept, the one server-side connection of the listening port that it does
// not know yet (Linux: /proc/self/fd).
//
//   ConnectionWatch watch(20, port);
//   auto c = watch.adopt();        // on the accepting thread, after accept()
//   { ConnectionWatch::Handling h(c.get()); ... }   // a handler's time does not count
//   watch.forget(c);               // the connection has closed
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ppsim::cli {

class ConnectionWatch {
public:
  struct Connection {
    int fd{-1};
    std::uint64_t inode{0};  ///< the socket's, so that a reused descriptor is never cut
    std::atomic<std::int64_t> since_ns{0};  ///< steady clock: the start or the last answer
    std::atomic<bool> in_handler{false};
    std::atomic<bool> cut{false};  ///< shut down at its deadline
  };

  /// Marks a connection as in a handler for its lifetime; at its end the clock starts again.
  /// A null connection (not watched) is ignored.
  class Handling {
  public:
    explicit Handling(Connection* c);
    ~Handling();
    Handling(const Handling&) = delete;
    Handling& operator=(const Handling&) = delete;

  private:
    Connection* c_;
  };

  /// `deadline_s` > 0; `port` is the listening port whose accepted connections are watched.
  ConnectionWatch(int deadline_s, int port);
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  /// The connection just accepted, now watched; null when there is not exactly one new one
  /// (then it runs without a deadline, under the read timeout alone).
  [[nodiscard]] std::shared_ptr<Connection> adopt();
  void forget(const std::shared_ptr<Connection>& c);

  /// The connection the calling thread serves (set by the pool around each job); null if none.
  [[nodiscard]] static Connection* current();
  static void set_current(Connection* c);

  [[nodiscard]] std::size_t watched() const;
  [[nodiscard]] std::size_t cuts() const { return cuts_.load(); }

private:
  void loop();

  std::int64_t deadline_ns_;
  int port_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_{false};
  std::vector<std::shared_ptr<Connection>> connections_;
  std::set<std::uint64_t> unwatched_;  ///< sockets adopt() could not tell apart, while open
  std::atomic<std::size_t> cuts_{0};
  std::thread thread_;
};

} // namespace ppsim::cli
