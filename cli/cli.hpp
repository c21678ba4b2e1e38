// The ppsim command line as a function, so tests run it in-process.
#pragma once

#include "ppsim/sim/exit_codes.hpp"

#include <exception>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace ppsim {

/// The exit code of an error: cli::UsageError 2, ConfigError 3, ScheduleError 4, InfeasibleError 5,
/// ExecutionError 6, out of memory 3 (the problem is too large), anything else 70.
[[nodiscard]] int exit_code_of(const std::exception& error);

/// Runs `ppsim` with `args` (without the program name); normal output to `out`, errors as
/// `ppsim: error: <where>: <what>` to `err`. Never throws.
///
///   std::ostringstream out, err;
///   int rc = run_cli({"simulate", "-s", "1f1b", "-p", "4", "-m", "8"}, out, err);
[[nodiscard]] int run_cli(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);

/// What run_cli knows of its stderr, for the progress line of long commands.
struct Terminal {
  bool err_is_terminal{false};     ///< main passes isatty(STDERR_FILENO); tests and pipes: false
  std::function<double()> clock;   ///< seconds; empty = the steady clock (tests pass a fake one)
};

/// run_cli with a progress line on `err` when it is a terminal (cli/progress.hpp): for work
/// over a second (calibration, sweeps, plans, long searches), cleared before results print.
[[nodiscard]] int run_cli(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err, const Terminal& terminal);

/// Links the commands and calibrations that need oneDNN, Open MPI and the HTTP server
/// (cli/full_parts.cpp, in ppsim_cli_full) into run_cli: the full executable `ppsim-full` and the
/// tests call it first; the `ppsim` front does not, and hands such command lines to ppsim-full.
void link_full_parts();

/// Whether `args` may run in a process without the full parts: a command of the front's
/// (list, simulate, ...) without --calibrate or --device cpu. Everything else (calibrate,
/// execute, serve, the help of all commands, man, completion, an unknown command) needs them.
[[nodiscard]] bool runs_without_full_parts(const std::vector<std::string>& args);

/// Whether `args` is a command that shares its work among the ranks of an MPI launcher
/// (`mpirun -np 4 ppsim sweep ...`: sweep and plan) and this process was started as one of several
/// ranks. Such a command line needs the full parts (MPI); only rank 0 writes (full_main gives
/// the other ranks no output).
[[nodiscard]] bool runs_on_ranks(const std::vector<std::string>& args);

} // namespace ppsim
