// Output files: temporary file + rename, beside the final target of a link, with the reason of
// every failure.
#include "ppsim/io/atomic_file.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <chrono>
#include <ostream>
#include <poll.h>
#include <streambuf>
#include <sys/stat.h>
#include <unistd.h>

namespace ppsim {

namespace {

namespace fs = std::filesystem;

// A stream buffer on a file descriptor that remembers why a write failed. A non-blocking one
// (a FIFO, a device) waits for room at most until the deadline, then fails with ETIMEDOUT.
class FdBuf : public std::streambuf {
public:
  explicit FdBuf(int fd)
      // NOTE: a deadline is the one use of a clock outside calibrate/: it bounds the waiting
      // for a FIFO's reader and never changes a result.
      : fd_(fd), deadline_(std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(limits::kMaxStreamWaitMs)) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  /// 0, or the errno of the first failed write.
  [[nodiscard]] int error() const { return error_; }
  bool drain() { return sync() == 0; }

protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        wait_for_room();
        continue;
      }
      if (n <= 0) error_ = n < 0 ? errno : EIO;
      else p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return error_ == 0 ? 0 : -1;
  }

private:
  void wait_for_room() {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLOUT, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready == 0) error_ = ETIMEDOUT;
    else if (ready < 0 && errno != EINTR) error_ = errno;
  }

  int fd_;
  std::chrono::steady_clock::time_point deadline_;
  int error_{0};
  std::array<char, 65536> buf_{};
};

ConfigError write_error(const std::string& path, int error) {
  if (error == ETIMEDOUT)
    return ConfigError(fmt::format("{}: cannot write (the reader took nothing for {} s)", path,
                                   limits::kMaxStreamWaitMs / 1000));
  if (error == ENXIO)  // O_NONBLOCK's answer for a FIFO that nothing has open for reading
    return ConfigError(fmt::format("{}: cannot write (a FIFO that nothing reads)", path));
  return ConfigError(fmt::format("{}: cannot write ({})", path, std::strerror(error)));
}

// Writes fill's output to the open descriptor and closes it; throws write_error on failure.
void fill_fd(int fd, const std::string& path, const std::function<void(std::ostream&)>& fill) {
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  FdBuf buf(fd);
  std::ostream out(&buf);
  fill(out);
  out.flush();
  if (buf.error() != 0) throw write_error(path, buf.error());
  closer.fd = -1;
  // NFS and quotas may report a failed write only here.
  if (::close(fd) != 0) throw write_error(path, errno);
}

// The final target of `path` after following symbolic links (it need not exist).
fs::path final_target(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) return p;
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  throw ConfigError(fmt::format("{}: too many levels of symbolic links", path));
}

} // namespace

void check_output_path(const std::string& path, std::string_view what) {
  if (path.empty()) throw ConfigError(fmt::format("{}: empty file name", what));
  if (path == "-") return;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) throw ConfigError(fmt::format("{} {}: is a directory", what, path));
  if (fs::is_block_file(st))
    throw ConfigError(fmt::format("{} {}: is a block device; ppsim writes files, FIFOs and "
                                  "character devices",
                                  what, path));
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    if (::access(path.c_str(), W_OK) != 0)
      throw ConfigError(fmt::format("{} {}: cannot write ({})", what, path, std::strerror(errno)));
    return;
  }
  fs::path dir = final_target(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    throw ConfigError(fmt::format("{} {}: the directory {} does not exist", what, path,
                                  dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw ConfigError(fmt::format("{} {}: cannot write in {} ({})", what, path, dir.string(),
                                  std::strerror(errno)));
}

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  if (path.empty()) throw ConfigError("output file: empty path");
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) throw ConfigError(fmt::format("{}: is a directory", path));
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a FIFO: there is nothing to rename over; write it as it is, never blocking
    // (a FIFO without a reader is ENXIO at once, a reader that stops reading a timeout).
    if (fs::is_block_file(st))
      throw ConfigError(fmt::format("{}: is a block device; ppsim writes files, FIFOs and "
                                    "character devices",
                                    path));
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw write_error(path, errno);
    fill_fd(fd, path, fill);
    return;
  }
  const fs::path target = final_target(path);
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = target.parent_path() / fmt::format(".{}.{}.{}.tmp",
                                                          target.filename().string(), ::getpid(),
                                                          counter++);
  struct Cleanup {
    fs::path p;
    bool armed{true};
    ~Cleanup() {
      if (armed) {
        std::error_code e;
        fs::remove(p, e);
      }
    }
  } cleanup{tmp};
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    cleanup.armed = false;  // nothing was created
    throw write_error(path, errno);
  }
  // A replaced file keeps its permissions.
  struct stat old {};
  if (::stat(target.c_str(), &old) == 0) (void)::fchmod(fd, old.st_mode & 07777);
  fill_fd(fd, path, fill);
  fs::rename(tmp, target, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot rename into place ({})", path, ec.message()));
  cleanup.armed = false;
}

} // namespace ppsim
