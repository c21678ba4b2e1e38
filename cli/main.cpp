// The ppsim executable: the front. It links the simulator and the commands that need nothing
// more (list, simulate, compare, sweep, check, validate, export, models, costs, plan, import,
// diff), so that they start without loading oneDNN, Open MPI or the HTTP server's libraries; any
// other command line runs in ppsim-full (beside this executable, or in ../libexec/ppsim/) with
// the same arguments.
#include "cli/cli.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <malloc.h>
#include <system_error>
#include <unistd.h>

namespace {

// ppsim-full beside this executable (the build tree), else in ../libexec/ppsim (an install).
std::filesystem::path full_executable() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "ppsim-full";
  const std::filesystem::path dir = self.parent_path();
  for (const auto& candidate : {dir / "ppsim-full", dir / ".." / "libexec" / "ppsim" / "ppsim-full"})
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  return dir / "ppsim-full";
}

} // namespace

int main(int argc, char** argv) {
  // glibc returns a freed block of 128 KiB or more to the kernel (munmap, or a trim of the heap),
  // and the next array of that size faults in fresh zeroed pages: a search that builds and drops
  // many orders spent a third of its time in page faults (zb-v at p = 32, m = 256: 12,742 faults,
  // 2,331 with these). Freed memory stays in this short-lived process up to 128 MiB.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 128 << 20);
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code =
      ppsim::run_cli(args, std::cout, std::cerr,
                     ppsim::Terminal{.err_is_terminal = ::isatty(STDERR_FILENO) == 1, .clock = {}});
  if (code != ppsim::kExitNeedsFull) return code;
  std::cout.flush();
  const std::filesystem::path full = full_executable();
  ::execv(full.c_str(), argv);
  std::cerr << "ppsim: error: ppsim: internal error: cannot run " << full.string() << ": "
            << std::strerror(errno) << " (this command needs ppsim-full, which is installed "
            << "beside ppsim or in ../libexec/ppsim/)\n";
  return ppsim::kExitInternal;
}
