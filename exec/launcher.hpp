// Starting the ranks: the mpirun command line for one machine or a hostfile, and a child process
// whose output is forwarded.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ppsim::exec {

struct LaunchOptions {
  int ranks{1};
  int threads{1};        ///< GEMM threads per rank (cores each rank is bound to)
  std::string hostfile;  ///< empty = every rank on this machine
  bool as_root{false};
  int cores{1};          ///< cores of this machine
};

/// `mpirun -np P [--allow-run-as-root] ...  EXE ARGS...`. On one machine: `--oversubscribe`,
/// the shared-memory transport (`--mca btl self,vader`), one core per GEMM thread of a rank
/// when the ranks fit on the cores, no binding otherwise. With a hostfile: `--hostfile FILE`
/// and Open MPI's choice of transport.
[[nodiscard]] std::vector<std::string> mpirun_command(const LaunchOptions& options,
                                                      const std::string& executable,
                                                      const std::vector<std::string>& args);

/// Runs `argv` (argv[0] looked up in PATH), copying its stdout to `out` and its stderr to `err`
/// as they come. Returns its exit status, or 128 + the signal that ended it; throws ConfigError
/// when it cannot start.
[[nodiscard]] int run_process(const std::vector<std::string>& argv, std::ostream& out,
                              std::ostream& err);

/// The path of the running executable (/proc/self/exe).
[[nodiscard]] std::string self_executable();

/// The command line as one shell-quoted string, for messages.
[[nodiscard]] std::string quoted(const std::vector<std::string>& argv);

} // namespace ppsim::exec
