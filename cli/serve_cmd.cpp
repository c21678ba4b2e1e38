// `ppsim serve`: the playground in the browser, and its JSON API, on cpp-httplib.
//
//   ppsim serve --port 8080            # then open http://127.0.0.1:8080/
//   curl 'http://127.0.0.1:8080/api/compare?s=1f1b,zb-h1&p=4&m=8&costs=F=2,B=2,W=2'
#include "cli/commands.hpp"
#include "cli/serve.hpp"
#include "cli/serve_watch.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <future>
#include <httplib.h>
#include <map>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <ostream>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace ppsim::cli {

namespace {

// One thread that runs the simulations in order, with a bounded queue in front of it.
class Worker {
public:
  explicit Worker(std::size_t max_waiting) : max_waiting_(max_waiting), thread_([this] { loop(); }) {}
  ~Worker() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The answer's future, or nothing when `max_waiting` jobs already wait.
  std::optional<std::future<HttpAnswer>> submit(std::function<HttpAnswer()> job) {
    std::packaged_task<HttpAnswer()> task(std::move(job));
    auto answer = task.get_future();
    {
      const std::lock_guard lock(mutex_);
      if (queue_.size() >= max_waiting_) return std::nullopt;
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return answer;
  }

private:
  void loop() {
    for (;;) {
      std::packaged_task<HttpAnswer()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();  // an abandoned request's answer is set and never read
    }
  }

  std::size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<HttpAnswer()>> queue_;
  bool stop_{false};
  std::thread thread_;
};

// httplib's ThreadPool with a bound on the connections that wait for a thread. Past it the
// accepting thread serves the connection itself, so that accepting pauses (the kernel's backlog
// holds the rest) instead of the queue growing without end.
// NOTE: httplib 0.11 gives a task queue only a job, not its socket, so a full queue cannot
// answer 503 and close; the pause is the bound.
// Each job's connection is adopted by the watch (serve_watch.hpp), which cuts it at its
// deadline.
class BoundedPool : public httplib::TaskQueue {
public:
  BoundedPool(int threads, int queued, ConnectionWatch* watch)
      : max_queued_(static_cast<std::size_t>(queued)), watch_(watch) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~BoundedPool() override = default;
  BoundedPool(const BoundedPool&) = delete;
  BoundedPool& operator=(const BoundedPool&) = delete;

  void enqueue(std::function<void()> accepted) override {
    // NOTE: called on the accepting thread right after the accept, so the one new connection
    // of the port is this job's.
    std::shared_ptr<ConnectionWatch::Connection> c = watch_ != nullptr ? watch_->adopt() : nullptr;
    std::function<void()> fn = [job = std::move(accepted), c, watch = watch_] {
      ConnectionWatch::set_current(c.get());
      job();
      ConnectionWatch::set_current(nullptr);
      if (watch != nullptr) watch->forget(c);
    };
    {
      const std::lock_guard lock(mutex_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        ready_.notify_one();
        return;
      }
    }
    fn();
  }
  void shutdown() override {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::size_t max_queued_;
  ConnectionWatch* watch_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_{false};
  std::vector<std::thread> threads_;
};

// API requests in flight per client address: one client cannot take every place of the worker.
class ClientCounter {
public:
  explicit ClientCounter(int limit) : limit_(limit) {}
  /// Counts one more request of `address`; false (and not counted) when it has `limit` already.
  bool enter(const std::string& address) {
    const std::lock_guard lock(mutex_);
    int& n = in_flight_[address];
    if (n >= limit_) return false;
    ++n;
    return true;
  }
  void leave(const std::string& address) {
    const std::lock_guard lock(mutex_);
    if (--in_flight_[address] <= 0) in_flight_.erase(address);
  }

private:
  int limit_;
  std::mutex mutex_;
  std::map<std::string, int> in_flight_;
};

} // namespace

// Connections the kernel holds for the accepting thread (SOMAXCONN caps it).
constexpr int kListenBacklog = 1024;

struct PlaygroundServer::Impl {
  explicit Impl(ServeConfig c)
      : config(std::move(c)), clients(config.connections.per_client), worker(2) {}
  ServeConfig config;
  std::unique_ptr<ConnectionWatch> watch;  // made by bind, once the port is known
  int listener{-1};                        // the listening socket (the last one httplib made)
  httplib::Server http;
  ClientCounter clients;
  Worker worker;
};

PlaygroundServer::PlaygroundServer(ServeConfig config)
    : impl_(std::make_unique<Impl>(std::move(config))) {
  Impl& im = *impl_;
  const ConnectionLimits& cl = im.config.connections;
  if (cl.threads < 1 || cl.queued < 0 || cl.per_client < 1 || cl.read_timeout_s < 1 ||
      cl.keep_alive_s < 1 || cl.request_deadline_s < 1)
    throw ConfigError("serve: connection limits must be positive");
  // Connection threads that only read requests and write answers; the simulations are one at
  // a time on the worker anyway. Slow clients hold threads, so there are many.
  im.http.new_task_queue = [&im, &cl] { return new BoundedPool(cl.threads, cl.queued, im.watch.get()); };
  im.http.set_read_timeout(cl.read_timeout_s);
  im.http.set_write_timeout(cl.read_timeout_s);
  im.http.set_keep_alive_timeout(cl.keep_alive_s);
  im.http.set_payload_max_length(64 * 1024);
  // NOTE: httplib's default socket options add SO_REUSEPORT, with which a second server on the
  // same port also listens and takes half of the connections. SO_REUSEADDR alone lets a
  // restarted server bind past TIME_WAIT, and never next to a listening one.
  // TCP_DEFER_ACCEPT: a connection that sends nothing stays in the kernel and never takes a
  // thread (idle sockets used to delay everyone by the read timeout each).
  im.http.set_socket_options([&im, &cl](socket_t sock) {
    im.listener = sock;
    int yes = 1;
    (void)::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    int defer = cl.read_timeout_s;
    (void)::setsockopt(sock, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
  });
  im.http.Get(R"(/.*)", [&im](const httplib::Request& req, httplib::Response& res) {
    // The time spent here (a simulation) is not the client's: its deadline waits.
    const ConnectionWatch::Handling handling(ConnectionWatch::current());
    // NOTE: the query is parsed here, not by httplib, whose parser keeps only the text after a
    // value's last '=' (costs=F=2,B=2 would lose F=).
    const QueryParams query = parse_query(req.target);
    HttpAnswer answer;
    if (!req.path.starts_with("/api/") || req.path == "/api/schedules") {
      answer = serve_answer(req.path, query, im.config);
    } else if (!im.clients.enter(req.remote_addr)) {
      answer = {503, "text/plain; charset=utf-8",
                fmt::format("ppsim serve: too many simulations from {} at once (at most {}); "
                            "try again\n",
                            req.remote_addr, im.config.connections.per_client)};
    } else {
      struct Leave {
        ClientCounter& c;
        const std::string& address;
        ~Leave() { c.leave(address); }
      } leave{im.clients, req.remote_addr};
      auto pending = im.worker.submit([&config = im.config, path = req.path, query] {
        return serve_answer(path, query, config);
      });
      const auto budget = std::chrono::duration<double>(im.config.limits.seconds);
      if (!pending) {
        answer = {503, "text/plain; charset=utf-8",
                  "ppsim serve: busy: other simulations are waiting; try again\n"};
      } else if (pending->wait_for(budget) != std::future_status::ready) {
        answer = {503, "text/plain; charset=utf-8",
                  fmt::format("ppsim serve: the simulation took longer than this server's budget "
                              "of {} s per request; ask for fewer schedules or a smaller p or m\n",
                              im.config.limits.seconds)};
      } else {
        answer = pending->get();
      }
    }
    res.status = answer.status;
    res.set_header("Cache-Control", "no-store");
    res.set_content(answer.body, answer.content_type.c_str());
  });
}

PlaygroundServer::~PlaygroundServer() {
  if (impl_) impl_->http.stop();
}

int PlaygroundServer::bind(const std::string& host, int port) {
  if (port < 0 || port > 65535) throw ConfigError(fmt::format("--port {}: not a port (0..65535)", port));
  int bound = port;
  if (port == 0) {
    bound = impl_->http.bind_to_any_port(host);
    if (bound <= 0) throw ConfigError(fmt::format("--host '{}': cannot listen there", excerpt(host)));
  } else if (!impl_->http.bind_to_port(host, port)) {
    throw ConfigError(fmt::format("--port {}: cannot listen on {}:{} (is another server using "
                                  "port {}?)",
                                  port, excerpt(host), port, port));
  }
  // NOTE: Debian's httplib listens with a backlog of 5 (compiled into its library): clients that
  // connect at once, faster than the accepting thread, waited for SYN-ACK retransmissions
  // (seconds). Listening again on the bound socket sets a larger one.
  if (impl_->listener >= 0) (void)::listen(impl_->listener, kListenBacklog);
  impl_->watch = std::make_unique<ConnectionWatch>(impl_->config.connections.request_deadline_s, bound);
  return bound;
}

std::size_t PlaygroundServer::deadline_cuts() const {
  return impl_->watch ? impl_->watch->cuts() : 0;
}

bool PlaygroundServer::run() { return impl_->http.listen_after_bind(); }

void PlaygroundServer::stop() { impl_->http.stop(); }

namespace {

struct ServeOptions {
  std::string host{"127.0.0.1"};
  int port{8080};
  std::string profiles;
  double seconds{ServeLimits{}.seconds};
};

bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

} // namespace

void add_serve_command(CLI::App& app, Io io, Action& action) {
  auto o = std::make_shared<ServeOptions>();
  auto* serve = app.add_subcommand(
      "serve", "the playground: a local web page that simulates and draws as you change parameters");
  serve->add_option("--port", o->port, "TCP port (default 8080; 0 picks a free one)");
  serve->add_option("--host", o->host,
                    "address to listen on (default 127.0.0.1: this machine only)");
  serve->add_option("--profiles", o->profiles,
                    "a folder of ppsim.costs/1 files the page offers (default data/costs when it "
                    "exists)");
  serve->add_option("--time-budget", o->seconds, "seconds one request may simulate (default 20)");
  serve->callback([io, &action, o] {
    action = [io, o] {
      if (!(o->seconds > 0) || o->seconds > 3600)
        throw ConfigError(fmt::format("--time-budget {}: give 0 < seconds <= 3600", o->seconds));
      ServeConfig config;
      config.limits.seconds = o->seconds;
      config.profiles_dir = o->profiles;
      std::error_code ec;
      if (config.profiles_dir.empty() && std::filesystem::is_directory("data/costs", ec))
        config.profiles_dir = "data/costs";
      else if (!config.profiles_dir.empty() && !std::filesystem::is_directory(config.profiles_dir, ec))
        throw ConfigError(fmt::format("--profiles '{}': not a folder", config.profiles_dir));
      PlaygroundServer server(config);
      const int port = server.bind(o->host, o->port);
      if (!loopback(o->host))
        io.err << fmt::format("ppsim: warning: serve: listening on {}: anyone who reaches it "
                              "can make this machine simulate (within the limits)\n",
                              o->host);
      const std::string shown = o->host.find(':') != std::string::npos ? "[" + o->host + "]" : o->host;
      io.out << fmt::format("ppsim serve: http://{}:{}/ (Ctrl-C stops)\n", shown, port) << std::flush;
      if (!server.run()) throw ConfigError(fmt::format("--port {}: the server stopped", port));
      return 0;
    };
  });
}

} // namespace ppsim::cli
