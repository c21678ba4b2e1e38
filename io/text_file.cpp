// Whole-file reads for the loaders, bounded before they are allocated.
#include "io/text_file.hpp"

#include "sim/errors.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
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

std::string read_text_file(const std::string& path, std::string_view what,
                           std::size_t max_bytes) {
  const auto too_large = [&] {
    return ConfigError(fmt::format("{}: the {} is larger than {} (the limit of an input file)",
                                   path, what, size_text(max_bytes)));
  };
  // NOTE: O_NONBLOCK would make a FIFO without a writer read as empty; a blocking open waits
  // for the writer, as any reader of a named pipe does.
  const Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0)
    throw ConfigError(fmt::format("{}: cannot open the {} ({})", path, what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0)
    throw ConfigError(fmt::format("{}: cannot read the {} ({})", path, what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw ConfigError(fmt::format("{}: is a directory, not a {}", path, what));
  // A regular file says its size: refuse it before reading a byte.
  if (S_ISREG(st.st_mode) && static_cast<unsigned long long>(st.st_size) > max_bytes)
    throw too_large();
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(
          fmt::format("{}: cannot read the {} ({})", path, what, std::strerror(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

} // namespace ppsim
