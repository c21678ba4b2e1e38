// Test helper: run a piece of a test in a child process under resource limits (address space,
// file size), so that a test can show an input costs what it should and not gigabytes.
#pragma once

#include "tests/cli/cli_harness.hpp"

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ppsim::test {

/// The limits of the child. 0 = unlimited.
struct ChildLimits {
  /// Bytes the address space may grow beyond this process's now. Not applied under
  /// AddressSanitizer, which reserves terabytes of shadow memory up front.
  std::size_t extra_address_space{0};
  /// Bytes a file the child writes may hold (RLIMIT_FSIZE; SIGXFSZ is ignored, so a write past
  /// it fails with EFBIG).
  std::size_t file_size{0};
};

/// Whether this build runs under AddressSanitizer (where extra_address_space is not applied).
inline constexpr bool kAddressSanitizer =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

namespace detail {

inline std::size_t address_space_now() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

inline void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k <= 0) return;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

inline void write_text(int fd, const std::string& s) {
  const std::uint64_t n = s.size();
  write_all(fd, &n, sizeof n);
  write_all(fd, s.data(), s.size());
}

inline bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

inline bool read_text(int fd, std::string& s) {
  std::uint64_t n = 0;
  if (!read_all(fd, &n, sizeof n)) return false;
  s.resize(static_cast<std::size_t>(n));
  return read_all(fd, s.data(), s.size());
}

} // namespace detail

/// Runs fn() in a forked child under `limits` and returns what it returned. A child that dies
/// (a crash, a signal) returns code -1 with the reason in `err`.
inline CliResult in_child(const ChildLimits& limits, const std::function<CliResult()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, "", "pipe failed"};
  const std::size_t base = detail::address_space_now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (limits.extra_address_space > 0 && !kAddressSanitizer) {
      const rlimit as{base + limits.extra_address_space, base + limits.extra_address_space};
      ::setrlimit(RLIMIT_AS, &as);
    }
    if (limits.file_size > 0) {
      std::signal(SIGXFSZ, SIG_IGN);
      const rlimit fs{limits.file_size, limits.file_size};
      ::setrlimit(RLIMIT_FSIZE, &fs);
    }
    const CliResult r = fn();
    const std::int32_t code = r.code;
    detail::write_all(fds[1], &code, sizeof code);
    detail::write_text(fds[1], r.out);
    detail::write_text(fds[1], r.err);
    ::close(fds[1]);
    ::_exit(0);  // no destructors, no atexit handlers of the parent's state
  }
  ::close(fds[1]);
  CliResult r{-1, "", ""};
  std::int32_t code = -1;
  const bool ok = detail::read_all(fds[0], &code, sizeof code) &&
                  detail::read_text(fds[0], r.out) && detail::read_text(fds[0], r.err);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!ok) {
    r.err = WIFSIGNALED(status) ? "the child died of signal " + std::to_string(WTERMSIG(status))
                                : "the child exited without a result";
    return r;
  }
  r.code = code;
  return r;
}

} // namespace ppsim::test
