// mpirun's command line and a child process with forwarded output (posix_spawn + poll).
#include "exec/launcher.hpp"

#include "sim/errors.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <ostream>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ppsim::exec {

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

int run_process(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0)
    throw ConfigError(fmt::format("execute: pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    posix_spawn_file_actions_addclose(&actions, fd);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw ConfigError(fmt::format("execute: cannot start '{}': {}{}", argv.front(),
                                  std::strerror(rc),
                                  rc == ENOENT ? " (install openmpi-bin: `make deps`)" : ""));
  }
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::ostream*, 2> sinks{&out, &err};
  int open = 2;
  std::array<char, 8192> buf{};
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      const ssize_t n = ::read(fds[k].fd, buf.data(), buf.size());
      if (n > 0) {
        sinks[k]->write(buf.data(), n);
        sinks[k]->flush();
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

} // namespace ppsim::exec
