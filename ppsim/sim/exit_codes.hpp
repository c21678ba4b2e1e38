// The exit codes of DESIGN.md, defined once: run_cli maps each error kind to one
// (cli::exit_code_of), and the ranks of `ppsim execute` exit with kExitExecutionFailed.
#pragma once

namespace ppsim {

/// Exit codes of DESIGN.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitRegression = 1,
  kExitUsage = 2,
  kExitBadInput = 3,
  kExitInvalidSchedule = 4,
  kExitInfeasible = 5,
  /// NOTE: beyond DESIGN.md's list: `ppsim execute` failed on the ranks (a rank died or hung,
  /// or the gradients differ from the reference); a failed run must never look like success.
  kExitExecutionFailed = 6,
  /// NOTE: beyond DESIGN.md's list: a bug in ppsim, not in the input (sysexits' EX_SOFTWARE).
  kExitInternal = 70,
  /// Never an exit status: run_cli in a process without the full parts (link_full_parts) says
  /// that this command line needs them, before it has written anything.
  kExitNeedsFull = -1,
};

} // namespace ppsim
