// `ppsim serve`'s answers, apart from the sockets: a request's path and query parameters (the
// command line's option names) become compare's argument list, are checked against the
// server's limits, and run through the same translation and library calls as `ppsim compare`.
//
//   ServeConfig config;
//   HttpAnswer a = serve_answer("/api/compare", {{"s", "1f1b,zb-h1"}, {"p", "4"}, {"m", "8"}}, config);
//   // a.status 200, a.body == `ppsim compare -s 1f1b,zb-h1 -p 4 -m 8 --json`'s output
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppsim::cli {

/// What one request may ask for: checked on the options before anything is generated.
struct ServeLimits {
  int devices{64};
  int microbatches{1024};
  int chunks{8};
  int iterations{8};
  int schedules{16};
  /// Tasks of all schedules together, estimated as p * m * max(v, 2) * 3 * iterations each.
  long long tasks{1'000'000};
  /// Wall time of one request's simulation; past it the answer is 503 (see serve_cmd.cpp).
  double seconds{20};
};

/// What the sockets may hold (serve_cmd.cpp): slow or idle clients cannot stop the server.
struct ConnectionLimits {
  /// Threads that read requests and write answers (the simulations run on one more); a slow
  /// client holds one while it sends.
  int threads{64};
  /// Accepted connections that wait for a thread; past it accepting pauses (see serve_cmd.cpp).
  int queued{256};
  /// Simulations (/api/compare, /api/timeline) one address may have in flight at once; past it
  /// 503 at once.
  int per_client{2};
  /// Seconds one read from a client may wait; also how long a connection that sends nothing
  /// stays in the kernel (TCP_DEFER_ACCEPT) without taking a thread.
  int read_timeout_s{5};
  /// Seconds a kept-alive connection may stay idle between requests.
  int keep_alive_s{2};
  /// Seconds a client has to send a request and take its answer, from its connection's start
  /// or its last answer (a simulation's time does not count); past it the connection is cut,
  /// however it trickles (serve_watch.hpp).
  int request_deadline_s{20};
};

struct ServeConfig {
  ServeLimits limits;
  ConnectionLimits connections;
  /// A folder of ppsim.costs/1 files that `costs-file=NAME` may name (NAME or NAME.json); empty
  /// = none. No other file of the server can be named.
  std::string profiles_dir;
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct HttpAnswer {
  int status{200};
  std::string content_type{"application/json"};
  std::string body;
};

/// The parameters of a request target's query (`/api/compare?s=1f1b&costs=F=2,B=2`), in order:
/// split at `&`, each at its first `=` (so values may hold `=` unencoded, as `--costs` does),
/// percent-decoded with `+` as a space.
[[nodiscard]] QueryParams parse_query(std::string_view target);

/// The query as compare's arguments, in order: a one-letter key becomes `-k VALUE`, a longer one
/// `--key VALUE` (so `s`, `p`, `m`, `v` and `schedule`, `stages`, `costs`, `mem-limit`, ... all
/// work).
[[nodiscard]] std::vector<std::string> query_arguments(const QueryParams& query);

/// The names of the cost profiles of `profiles_dir` (file names without `.json`), sorted.
[[nodiscard]] std::vector<std::string> cost_profiles(const std::string& profiles_dir);

/// The answer to GET `path` with `query`:
///   /               the playground page (text/html)
///   /api/compare    compare --json's ppsim.metrics/1 array
///   /api/timeline   the ppsim.report/1 document the page draws (ppsim/viz/report_data.hpp)
///   /api/schedules  list --json
/// A bad parameter, a value over a limit, or an option the server does not take (files, output
/// files, calibration) is 400 with the command line's error text (`ppsim: error: compare: ...`);
/// an unknown path 404. Never throws.
[[nodiscard]] HttpAnswer serve_answer(const std::string& path, const QueryParams& query,
                                      const ServeConfig& config);

/// The HTTP server (cpp-httplib, serve_cmd.cpp) around serve_answer. The API's simulations run
/// one at a time on a worker thread; a request waits at most `limits.seconds` for its answer
/// (then 503; the simulation, bounded by the limits, finishes and its answer is dropped), and at
/// most two wait behind the one running (more get 503 at once). The connections are bounded by
/// `connections`: a pool of threads with a bounded queue, read and keep-alive timeouts, idle
/// connections kept out of the pool, and a limit of simulations per address. The port is bound
/// exclusively (no SO_REUSEPORT): a second server on a port in use fails to bind.
///
///   PlaygroundServer server(config);
///   int port = server.bind("127.0.0.1", 0);   // 0: any free port
///   server.run();                             // until stop() from another thread
class PlaygroundServer {
public:
  explicit PlaygroundServer(ServeConfig config);
  ~PlaygroundServer();
  PlaygroundServer(const PlaygroundServer&) = delete;
  PlaygroundServer& operator=(const PlaygroundServer&) = delete;

  /// Binds host:port (0 = any free port) and returns the port; ConfigError when it cannot.
  int bind(const std::string& host, int port);
  /// Serves until stop(); returns false when the server could not listen.
  bool run();
  void stop();
  /// Connections cut at their deadline so far (ConnectionLimits::request_deadline_s).
  [[nodiscard]] std::size_t deadline_cuts() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ppsim::cli
