// `ppsim serve`: the playground in the browser, and its JSON API, on cpp-httplib.
//
//   ppsim serve --port 8080            # then open http://127.0.0.1:8080/
//   curl 'http://127.0.0.1:8080/api/compare?s=1f1b,zb-h1&p=4&m=8&costs=F=2,B=2,W=2'
#include "cli/commands.hpp"
#include "cli/serve.hpp"
#include "sim/errors.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <future>
#include <httplib.h>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

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

} // namespace

struct PlaygroundServer::Impl {
  explicit Impl(ServeConfig c) : config(std::move(c)), worker(2) {}
  ServeConfig config;
  httplib::Server http;
  Worker worker;
};

PlaygroundServer::PlaygroundServer(ServeConfig config)
    : impl_(std::make_unique<Impl>(std::move(config))) {
  Impl& im = *impl_;
  // A handful of connection threads: the simulations are one at a time anyway.
  im.http.new_task_queue = [] { return new httplib::ThreadPool(4); };
  im.http.set_read_timeout(10);
  im.http.set_write_timeout(30);
  im.http.set_payload_max_length(64 * 1024);
  im.http.Get(R"(/.*)", [&im](const httplib::Request& req, httplib::Response& res) {
    // NOTE: the query is parsed here, not by httplib, whose parser keeps only the text after a
    // value's last '=' (costs=F=2,B=2 would lose F=).
    const QueryParams query = parse_query(req.target);
    HttpAnswer answer;
    if (!req.path.starts_with("/api/") || req.path == "/api/schedules") {
      answer = serve_answer(req.path, query, im.config);
    } else {
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
  if (port == 0) {
    const int got = impl_->http.bind_to_any_port(host);
    if (got <= 0) throw ConfigError(fmt::format("--host '{}': cannot listen there", host));
    return got;
  }
  if (!impl_->http.bind_to_port(host, port))
    throw ConfigError(fmt::format("--host '{}' --port {}: cannot listen there (in use?)", host, port));
  return port;
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
