// Whole-file reads for the loaders, bounded before they are allocated, never blocking.
#include "ppsim/io/text_file.hpp"

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ppsim {

namespace {

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

} // namespace

std::string read_text_file(const std::string& name, std::string_view what,
                           std::size_t max_bytes, int wait_ms) {
  // A path is quoted whole up to 240 characters, a longer one cut as any input text.
  const std::string path = excerpt(name, 240);
  const auto too_large = [&] {
    return ConfigError(fmt::format("{}: the {} is larger than {} (the limit of an input file)",
                                   path, what, size_text(max_bytes)));
  };
  const auto cannot_read = [&](int error) {
    return ConfigError(fmt::format("{}: cannot read the {} ({})", path, what, std::strerror(error)));
  };
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const Fd in{::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (in.fd < 0)
    throw ConfigError(fmt::format("{}: cannot open the {} ({})", path, what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw cannot_read(errno);
  if (S_ISDIR(st.st_mode)) throw ConfigError(fmt::format("{}: is a directory, not a {}", path, what));
  const bool regular = S_ISREG(st.st_mode);
  if (!regular && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    throw ConfigError(fmt::format("{}: is not a regular file, a FIFO or a character device, "
                                  "not a {}",
                                  path, what));
  // A regular file says its size: refuse it before reading a byte.
  if (regular && static_cast<unsigned long long>(st.st_size) > max_bytes) throw too_large();
  std::string text;
  if (regular) text.reserve(static_cast<std::size_t>(st.st_size));
  // NOTE: a deadline is the one use of a clock outside calibrate/: it bounds the waiting for a
  // FIFO's or device's writer and never changes a result.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  char buf[65536];
  while (true) {
    if (!regular) {
      // A FIFO without a writer reads as the end at once and a slow one as EAGAIN: wait for
      // data (or the writer's close, POLLHUP) first, and never past the deadline.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{in.fd, POLLIN, 0};
      const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (ready < 0) {
        if (errno == EINTR) continue;
        throw cannot_read(errno);
      }
      if (ready == 0)
        throw ConfigError(fmt::format(
            "{}: the {} (a FIFO or device) did not end within {} s: nothing writes it, or it "
            "never closes",
            path, what, wait_ms / 1000.0));
    }
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw cannot_read(errno);
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

} // namespace ppsim
