// Temporary file + rename.
#include "io/atomic_file.hpp"

#include "sim/errors.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

namespace ppsim {

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  namespace fs = std::filesystem;
  if (path.empty()) throw ConfigError("output file: empty path");
  const fs::path target(path);
  if (fs::is_directory(target)) throw ConfigError(fmt::format("{}: is a directory", path));
  const fs::path tmp = target.parent_path() /
                       fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid());
  struct Cleanup {
    fs::path p;
    bool armed{true};
    ~Cleanup() {
      if (armed) {
        std::error_code ec;
        fs::remove(p, ec);
      }
    }
  } cleanup{tmp};
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw ConfigError(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
    fill(out);
    out.flush();
    if (!out) throw ConfigError(fmt::format("{}: write failed", path));
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot rename into place ({})", path, ec.message()));
  cleanup.armed = false;
}

} // namespace ppsim
