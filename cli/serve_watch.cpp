// The connection deadline of `ppsim serve` (serve_watch.hpp).
#include "cli/serve_watch.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <set>
#include <netinet/in.h>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>

namespace ppsim::cli {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The inode of `fd` when it is a connected (not listening) TCP socket whose local port is
// `port`; 0 otherwise.
std::uint64_t server_socket_inode(int fd, int port) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening != 0) return 0;
  sockaddr_storage addr{};
  len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  int local = -1;
  if (addr.ss_family == AF_INET) local = ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  else if (addr.ss_family == AF_INET6) local = ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  return local == port ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

// The descriptors this process has open, from /proc/self/fd (only the open ones: a scan up to
// the descriptor limit could be a million calls).
std::vector<int> open_descriptors() {
  std::vector<int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name.empty() || name.front() < '0' || name.front() > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != own) out.push_back(fd);
  }
  ::closedir(dir);
  return out;
}

thread_local ConnectionWatch::Connection* current_connection = nullptr;

} // namespace

ConnectionWatch::Handling::Handling(Connection* c) : c_(c) {
  if (c_ != nullptr) c_->in_handler = true;
}

ConnectionWatch::Handling::~Handling() {
  if (c_ == nullptr) return;
  c_->since_ns = steady_ns();
  c_->in_handler = false;
}

ConnectionWatch::ConnectionWatch(int deadline_s, int port)
    : deadline_ns_(std::int64_t{deadline_s} * 1'000'000'000), port_(port),
      thread_([this] { loop(); }) {}

ConnectionWatch::~ConnectionWatch() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<ConnectionWatch::Connection> ConnectionWatch::adopt() {
  const std::lock_guard lock(mutex_);
  std::vector<std::pair<int, std::uint64_t>> fresh;
  std::set<std::uint64_t> open;
  for (const int fd : open_descriptors()) {
    const std::uint64_t ino = server_socket_inode(fd, port_);
    if (ino == 0) continue;
    open.insert(ino);
    if (unwatched_.contains(ino) ||
        std::any_of(connections_.begin(), connections_.end(),
                    [ino](const auto& c) { return c->inode == ino; }))
      continue;
    fresh.emplace_back(fd, ino);
  }
  std::erase_if(unwatched_, [&open](std::uint64_t ino) { return !open.contains(ino); });
  if (fresh.size() != 1) {
    // Several new ones: which is this job's is unknown. None is watched, and none is taken for
    // a later job's (the next accept finds its own alone).
    for (const auto& f : fresh) unwatched_.insert(f.second);
    return nullptr;
  }
  const auto [found, inode] = fresh.front();
  auto c = std::make_shared<Connection>();
  c->fd = found;
  c->inode = inode;
  c->since_ns = steady_ns();
  connections_.push_back(c);
  return c;
}

void ConnectionWatch::forget(const std::shared_ptr<Connection>& c) {
  if (!c) return;
  const std::lock_guard lock(mutex_);
  std::erase(connections_, c);
}

ConnectionWatch::Connection* ConnectionWatch::current() { return current_connection; }

void ConnectionWatch::set_current(Connection* c) { current_connection = c; }

std::size_t ConnectionWatch::watched() const {
  const std::lock_guard lock(mutex_);
  return connections_.size();
}

void ConnectionWatch::loop() {
  // A check four times per deadline, at most every 250 ms: a connection is cut within a
  // quarter of its deadline past it.
  const auto every = std::chrono::nanoseconds(std::clamp<std::int64_t>(deadline_ns_ / 4, 1'000'000, 250'000'000));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
    const std::int64_t now = steady_ns();
    for (const auto& c : connections_) {
      if (c->cut || c->in_handler || now - c->since_ns < deadline_ns_) continue;
      struct stat st {};
      // the descriptor may have been closed and reused: cut only the same socket
      if (::fstat(c->fd, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != c->inode) continue;
      // counted before the cut: whoever sees the socket close sees the count that says why
      c->cut = true;
      ++cuts_;
      ::shutdown(c->fd, SHUT_RDWR);
    }
  }
}

} // namespace ppsim::cli
