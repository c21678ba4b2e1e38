// mpirun's command line and a supervised child process: forwarded output (poll), its own
// process group, and the stop signals passed on to that group.
#include "exec/launcher.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <ostream>
#include <poll.h>
#include <regex>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace ppsim::exec {

std::vector<std::string> check_hostfile(std::string_view text, const std::string& where) {
  std::vector<std::string> hosts;
  std::size_t line_no = 0;
  const auto fail = [&](const std::string& what) {
    return ConfigError(fmt::format("{}:{}: {}", where, line_no, what));
  };
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' ||
           c == '_' || c == ':';
  };
  for_each_field(text, '\n', [&](std::string_view raw) {
    ++line_no;
    std::string line(raw.substr(0, raw.find('#')));
    std::replace_if(line.begin(), line.end(), [](char c) { return c == '\t' || c == '\r'; }, ' ');
    std::vector<std::string_view> words;
    for_each_field(line, ' ', [&](std::string_view w) {
      w = trim(w);
      if (!w.empty()) words.push_back(w);
      return true;
    });
    if (words.empty()) return true;
    const std::string_view host = words.front();
    if (!std::all_of(host.begin(), host.end(), name_char))
      throw fail(fmt::format("'{}' is not a host name (a hostfile line is `HOST [slots=N] "
                             "[max_slots=N]`)",
                             excerpt(host)));
    for (std::size_t i = 1; i < words.size(); ++i) {
      const auto eq = words[i].find('=');
      const std::string_view key = words[i].substr(0, eq);
      const std::string_view value = eq == std::string_view::npos ? "" : words[i].substr(eq + 1);
      if (eq == std::string_view::npos || key.empty() || value.empty() ||
          !std::all_of(value.begin(), value.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
        throw fail(fmt::format("'{}': expected KEY=N after the host (slots=4, max_slots=8)",
                               excerpt(words[i])));
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string name(host);
    if (const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found); rc != 0)
      throw fail(fmt::format("unknown host '{}' ({})", excerpt(host), ::gai_strerror(rc)));
    ::freeaddrinfo(found);
    hosts.push_back(name);
    return true;
  });
  if (hosts.empty())
    throw ConfigError(fmt::format("{}: no host in the hostfile (a line is `HOST [slots=N]`)", where));
  return hosts;
}

std::vector<std::string> mpirun_command(const LaunchOptions& o, const std::string& executable,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> cmd{"mpirun", "-np", fmt::format("{}", o.ranks)};
  if (o.as_root) cmd.emplace_back("--allow-run-as-root");
  if (o.hostfile.empty()) {
    cmd.insert(cmd.end(), {"--oversubscribe", "--mca", "btl", "self,vader"});
    if (o.ranks * o.threads <= o.cores)
      cmd.insert(cmd.end(), {"--map-by", fmt::format("slot:PE={}", o.threads), "--bind-to", "core"});
    else
      cmd.insert(cmd.end(), {"--bind-to", "none"});
  } else {
    cmd.insert(cmd.end(), {"--hostfile", o.hostfile});
  }
  cmd.push_back(executable);
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

std::string quoted(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) {
    if (!text.empty()) text += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                                         "OPQRSTUVWXYZ0123456789-_.,:=/+@") ==
                                         std::string::npos;
    if (plain) {
      text += a;
      continue;
    }
    text += '\'';
    for (char c : a) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

std::string self_executable() {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) throw ConfigError("execute: cannot find the path of this program (/proc/self/exe)");
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

namespace {

// The self-pipe of the signal handler: the poll loop wakes on it.
volatile std::sig_atomic_t g_signal = 0;
int g_wake_fd = -1;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  const int saved = errno;
  const char c = 's';
  if (g_wake_fd >= 0) (void)!::write(g_wake_fd, &c, 1);
  errno = saved;
}

constexpr std::array<int, 3> kStopSignals{SIGINT, SIGTERM, SIGHUP};

// Installs on_stop_signal for the stop signals not ignored now, and restores the old handlers.
class StopSignals {
public:
  explicit StopSignals(int wake_fd) {
    g_signal = 0;
    g_wake_fd = wake_fd;
    for (std::size_t k = 0; k < kStopSignals.size(); ++k) {
      struct sigaction now {};
      ::sigaction(kStopSignals[k], nullptr, &now);
      if (now.sa_handler == SIG_IGN) continue;  // nohup, or a background job's SIGINT
      struct sigaction act {};
      act.sa_handler = on_stop_signal;
      sigemptyset(&act.sa_mask);
      act.sa_flags = SA_RESTART;
      installed_[k] = ::sigaction(kStopSignals[k], &act, &old_[k]) == 0;
    }
  }
  ~StopSignals() {
    for (std::size_t k = 0; k < kStopSignals.size(); ++k)
      if (installed_[k]) ::sigaction(kStopSignals[k], &old_[k], nullptr);
    g_wake_fd = -1;
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

private:
  std::array<struct sigaction, kStopSignals.size()> old_{};
  std::array<bool, kStopSignals.size()> installed_{};
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

} // namespace

std::string signal_name(int signal) {
  switch (signal) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  case SIGHUP: return "SIGHUP";
  case SIGKILL: return "SIGKILL";
  default: return fmt::format("signal {}", signal);
  }
}

std::string roster_line(const RankPlace& p) {
  return fmt::format("\x1fppsim-rank {} host={} address={} pid={}", p.rank,
                     p.host.empty() ? "?" : p.host, p.address.empty() ? "?" : p.address, p.pid);
}

std::optional<RankPlace> parse_roster_line(std::string_view line) {
  static const std::regex form("\x1fppsim-rank (\\d+) host=(\\S+) address=(\\S+) pid=(\\d+)\\s*");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(line.begin(), line.end(), m, form)) return std::nullopt;
  RankPlace p;
  try {
    p.rank = static_cast<int>(parse_integer(m[1].str(), "roster rank", 0, limits::kMaxDevices));
    p.pid = static_cast<int>(parse_integer(m[4].str(), "roster pid", 0, INT_MAX));
  } catch (const ConfigError&) {
    return std::nullopt;  // digits beyond any rank or pid: not a line a rank wrote
  }
  p.host = m[2].str() == "?" ? "" : m[2].str();
  p.address = m[3].str() == "?" ? "" : m[3].str();
  return p;
}

namespace {

// Each `process rank N ...` line of the report: fn(rank, whether it died of a broken pipe).
template <class Fn> void for_each_process_rank(const std::string& text, Fn&& fn) {
  static const std::regex rank_pattern("process rank (\\d+)([^\\n]*)");
  for (std::sregex_iterator it(text.begin(), text.end(), rank_pattern), end; it != end; ++it)
    if ((*it)[1].length() < 9)
      fn(static_cast<int>(parse_integer((*it)[1].str(), "lost rank", 0, 99'999'999)),
         (*it)[2].str().find("on signal 13 ") != std::string::npos);
}

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

} // namespace

std::vector<int> broken_pipe_ranks(std::string_view report) {
  std::vector<int> out;
  for_each_process_rank(std::string(report), [&](int rank, bool pipe) {
    if (pipe) out.push_back(rank);
  });
  sort_unique(out);
  return out;
}

std::vector<int> lost_ranks(std::string_view report, const std::vector<RankPlace>& roster) {
  std::vector<int> lost;
  const auto on_host = [&](const std::string& name) {
    for (const RankPlace& p : roster)
      if (name == p.host || name == p.address) lost.push_back(p.rank);
  };
  const std::string text(report);
  // A peer that disconnected, a daemon lost, or a peer a surviving rank could no longer connect
  // to (Open MPI 4.1's "failed to TCP connect to a peer MPI process ... connect() to
  // 10.77.0.2:1026 failed", printed when a host dies before its daemon's loss is reported).
  static const std::regex host_pattern(
      "Peer host: *(\\S+)|Remote daemon:[^\\n]* on node (\\S+)|"
      "connect\\(\\) to ([^\\s:]+):\\d+ failed");
  std::vector<int> pipe;
  for_each_process_rank(text, [&](int rank, bool broken_pipe) {
    (broken_pipe ? pipe : lost).push_back(rank);
  });
  for (std::sregex_iterator it(text.begin(), text.end(), host_pattern), end; it != end; ++it)
    for (std::size_t g = 1; g <= 3; ++g)
      if ((*it)[g].matched) on_host((*it)[g].str());
  sort_unique(pipe);
  // NOTE: a broken pipe is the survivor's side of a lost connection (Open MPI 4.1 over TCP, a
  // host killed mid-run: mpirun then names only rank 0, on the host that lived)
  std::erase_if(lost, [&](int r) { return std::binary_search(pipe.begin(), pipe.end(), r); });
  if (lost.empty() && !pipe.empty()) {
    std::vector<std::string> pipe_hosts;
    for (const RankPlace& p : roster)
      if (std::binary_search(pipe.begin(), pipe.end(), p.rank)) pipe_hosts.push_back(p.host);
    for (const RankPlace& p : roster)
      if (!std::binary_search(pipe.begin(), pipe.end(), p.rank) &&
          std::find(pipe_hosts.begin(), pipe_hosts.end(), p.host) == pipe_hosts.end())
        lost.push_back(p.rank);
    if (lost.empty()) lost = pipe;  // nowhere else it could have been: say what mpirun says
  }
  sort_unique(lost);
  return lost;
}

bool daemon_lost_after_start(std::string_view report, const std::vector<RankPlace>& roster,
                             int ranks) {
  if (report.find("unable to reliably start one or more daemons") == std::string_view::npos)
    return false;
  std::vector<int> seen;
  for (const RankPlace& p : roster)
    if (p.rank >= 0 && p.rank < ranks) seen.push_back(p.rank);
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  return static_cast<int>(seen.size()) == ranks;
}

std::string hosts_of(const std::vector<RankPlace>& roster) {
  std::vector<RankPlace> sorted = roster;
  std::sort(sorted.begin(), sorted.end(),
            [](const RankPlace& a, const RankPlace& b) { return a.rank < b.rank; });
  std::vector<std::pair<std::string, std::vector<int>>> hosts;
  for (const RankPlace& p : sorted) {
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const auto& h) { return h.first == p.host; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), {p.host, {}});
    it->second.push_back(p.rank);
  }
  std::string out;
  for (const auto& [host, ranks] : hosts) {
    out += fmt::format("{}{} (rank{} ", out.empty() ? "" : ", ", host, ranks.size() > 1 ? "s" : "");
    for (std::size_t k = 0; k < ranks.size(); ++k) out += fmt::format("{}{}", k ? ", " : "", ranks[k]);
    out += ")";
  }
  return out;
}

void signal_local_ranks(const std::vector<RankPlace>& roster, int signal) {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return;
  for (const RankPlace& p : roster) {
    if (p.host != host.data() || p.pid <= 1) continue;
    std::FILE* f = std::fopen(fmt::format("/proc/{}/cmdline", p.pid).c_str(), "rb");
    if (f == nullptr) continue;
    std::array<char, 4096> cmd{};
    const std::size_t n = std::fread(cmd.data(), 1, cmd.size(), f);
    std::fclose(f);
    const std::string_view line(cmd.data(), n);
    if (line.find("execute") != std::string_view::npos &&
        line.find("--roster") != std::string_view::npos)
      ::kill(p.pid, signal);
  }
}

namespace {

// The pipes of a supervised child: its stdout and stderr, exec's errno (closed on a successful
// exec), and the stop signals' wake-up. [0] reads, [1] writes.
struct ChildPipes {
  std::array<int, 2> out{-1, -1}, err{-1, -1}, exec{-1, -1}, wake{-1, -1};
};

ChildPipes open_child_pipes() {
  ChildPipes p;
  if (::pipe2(p.out.data(), O_CLOEXEC) != 0 || ::pipe2(p.err.data(), O_CLOEXEC) != 0 ||
      ::pipe2(p.exec.data(), O_CLOEXEC) != 0 || ::pipe2(p.wake.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
    const int e = errno;
    for (auto* pipe : {&p.out, &p.err, &p.exec, &p.wake}) {
      close_fd((*pipe)[0]);
      close_fd((*pipe)[1]);
    }
    throw ConfigError(fmt::format("execute: pipe: {}", std::strerror(e)));
  }
  return p;
}

// Forks and execs argv in a process group of its own, its output on the pipes; returns its pid
// with only the read ends and the wake-up pipe left open. On failure (fork, or exec: its errno
// comes through the exec pipe) nothing is left open and the error says why.
pid_t start_child(const std::vector<std::string>& argv, ChildPipes& pipes) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  sigset_t all, before;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    for (const int sig : kStopSignals) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      struct sigaction now {};
      ::sigaction(sig, nullptr, &now);
      if (now.sa_handler != SIG_IGN) ::sigaction(sig, &dfl, nullptr);
    }
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::dup2(pipes.out[1], 1);
    ::dup2(pipes.err[1], 2);
    ::execvp(cargv[0], cargv.data());
    const int e = errno;
    (void)!::write(pipes.exec[1], &e, sizeof e);
    ::_exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) ::setpgid(pid, pid);  // also here, so that no signal can miss the group
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  for (int* fd : {&pipes.out[1], &pipes.err[1], &pipes.exec[1]}) close_fd(*fd);
  if (pid < 0) {
    for (int* fd : {&pipes.out[0], &pipes.err[0], &pipes.exec[0], &pipes.wake[0], &pipes.wake[1]})
      close_fd(*fd);
    throw ConfigError(fmt::format("execute: fork: {}", std::strerror(fork_errno)));
  }
  // Did exec fail? The pipe closes on a successful exec, or carries its errno.
  int exec_errno = 0;
  ssize_t got = 0;
  while ((got = ::read(pipes.exec[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close_fd(pipes.exec[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    for (int* fd : {&pipes.out[0], &pipes.err[0], &pipes.wake[0], &pipes.wake[1]}) close_fd(*fd);
    throw ConfigError(fmt::format("execute: cannot start '{}': {}{}", argv.front(),
                                  std::strerror(exec_errno),
                                  exec_errno == ENOENT ? " (install openmpi-bin: `make deps`)"
                                                       : ""));
  }
  return pid;
}

// A started child watched to its end: its output copied out as it comes (stderr line by line
// through take_line), a stop signal passed on to its group as SIGTERM, SIGKILL after the grace.
class Supervision {
public:
  Supervision(pid_t pid, ChildPipes& pipes, std::ostream& out, std::ostream& err,
              const SupervisorHooks& hooks, int grace_ms)
      : pid_(pid), pipes_(pipes), out_(out), err_(err), hooks_(hooks), grace_ms_(grace_ms) {}

  // Until both outputs close.
  void pump() {
    std::array<pollfd, 3> fds{pollfd{pipes_.out[0], POLLIN, 0}, pollfd{pipes_.err[0], POLLIN, 0},
                              pollfd{pipes_.wake[0], POLLIN, 0}};
    std::array<std::ostream*, 2> sinks{&out_, &err_};
    int open = 2;
    std::array<char, 8192> buf{};
    while (open > 0) {
      int timeout = -1;
      if (stopped_by_ != 0 && !killed_)
        timeout = static_cast<int>(std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(kill_at_ - Clock::now())
                   .count()));
      const int ready = ::poll(fds.data(), fds.size(), timeout);
      stop();
      escalate();
      if (ready < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[2].revents != 0) drain_wake();
      for (std::size_t k = 0; k < 2; ++k) {
        if (fds[k].fd < 0 || fds[k].revents == 0) continue;
        const ssize_t n = ::read(fds[k].fd, buf.data(), buf.size());
        if (n > 0) {
          if (k == 0) out_.write(buf.data(), n);
          else to_err(buf.data(), static_cast<std::size_t>(n), false);
          sinks[k]->flush();
        } else if (n == 0 || errno != EINTR) {
          if (k == 1) to_err(nullptr, 0, true);
          close_fd(k == 0 ? pipes_.out[0] : pipes_.err[0]);
          fds[k].fd = -1;
          --open;
        }
      }
    }
  }

  // Output closed: the child is ending (or closed its output and goes on: a signal still stops
  // it, which a blocking waitpid, restarted after the handler, would not notice).
  ProcessOutcome reap() {
    int status = 0;
    while (true) {
      const pid_t w = ::waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (w < 0) {
        if (errno == EINTR) continue;
        break;
      }
      pollfd wake{pipes_.wake[0], POLLIN, 0};
      if (::poll(&wake, 1, 20) > 0) drain_wake();
      stop();
      escalate();
    }
    if (stopped_by_ != 0) ::kill(-pid_, SIGKILL);  // whatever of the group outlived its leader
    for (int* fd : {&pipes_.wake[0], &pipes_.wake[1]}) close_fd(*fd);
    ProcessOutcome outcome;
    outcome.stopped_by = stopped_by_;
    if (WIFEXITED(status)) outcome.status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) outcome.status = 128 + WTERMSIG(status);
    else outcome.status = 1;
    return outcome;
  }

private:
  using Clock = std::chrono::steady_clock;

  void drain_wake() const {
    char drain[64];
    while (::read(pipes_.wake[0], drain, sizeof drain) > 0) {
    }
  }

  // With take_line, stderr goes through line by line (a partial line waits for its end).
  void to_err(const char* data, std::size_t n, bool last) {
    if (!hooks_.take_line) {
      err_.write(data, static_cast<std::streamsize>(n));
      return;
    }
    pending_.append(data, n);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string_view line(pending_.data() + start, nl - start);
      if (!hooks_.take_line(line)) err_ << line << '\n';
    }
    pending_.erase(0, start);
    if (last && !pending_.empty()) {
      if (!hooks_.take_line(pending_)) err_ << pending_;
      pending_.clear();
    }
  }

  void stop() {
    if (stopped_by_ != 0 || g_signal == 0) return;
    stopped_by_ = g_signal;
    ::kill(-pid_, SIGTERM);
    if (hooks_.on_stop) hooks_.on_stop(SIGTERM);
    kill_at_ = Clock::now() + std::chrono::milliseconds(grace_ms_);
  }

  void escalate() {
    if (stopped_by_ == 0 || killed_ || Clock::now() < kill_at_) return;
    ::kill(-pid_, SIGKILL);
    if (hooks_.on_stop) hooks_.on_stop(SIGKILL);
    killed_ = true;
  }

  pid_t pid_;
  ChildPipes& pipes_;
  std::ostream& out_;
  std::ostream& err_;
  const SupervisorHooks& hooks_;
  int grace_ms_;
  int stopped_by_{0};
  bool killed_{false};
  Clock::time_point kill_at_{};
  std::string pending_;
};

} // namespace

ProcessOutcome run_supervised(const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& err, const SupervisorHooks& hooks, int grace_ms) {
  if (argv.empty()) throw ConfigError("execute: no command to run");
  ChildPipes pipes = open_child_pipes();
  // Handlers first: a signal that comes between fork and the loop is not lost.
  const StopSignals signals(pipes.wake[1]);
  const pid_t pid = start_child(argv, pipes);
  Supervision child(pid, pipes, out, err, hooks, grace_ms);
  child.pump();
  return child.reap();
}

int run_process(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  return run_supervised(argv, out, err).status;
}

} // namespace ppsim::exec
