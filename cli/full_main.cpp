// ppsim-full: every command, with oneDNN, Open MPI and the HTTP server linked. The `ppsim` front
// runs it for the command lines that need them (calibrate, execute, serve, --calibrate, --device
// cpu, the help of all commands, a sweep on mpirun's ranks); it is also a complete ppsim on its own.
#include "cli/cli.hpp"
#include "ppsim/io/launcher_env.hpp"

#include <chrono>
#include <iostream>
#include <ostream>
#include <thread>
#include <unistd.h>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  ppsim::link_full_parts();
  const std::vector<std::string> args(argv + 1, argv + argc);
  // A command shared among mpirun's ranks speaks through rank 0 alone: the others would
  // repeat its every line (the same error, the same progress).
  const auto here = ppsim::launcher_rank();
  if (ppsim::runs_on_ranks(args) && here && here->rank != 0) {
    std::ostream none(nullptr);
    const int code = ppsim::run_cli(args, none, none, ppsim::Terminal{});
    // mpirun stops the job at the first process to exit non-zero: had that been this rank, rank
    // 0 could be killed before its message was out. Rank 0 fails the same way (a bad input is
    // every rank's, and share_work rethrows one error on all of them), so a failing rank gives
    // it the time to tell the error, bounded, and is stopped by mpirun as soon as rank 0 exits.
    if (code != ppsim::kExitOk) std::this_thread::sleep_for(std::chrono::seconds(3));
    return code;
  }
  return ppsim::run_cli(args, std::cout, std::cerr,
                        ppsim::Terminal{.err_is_terminal = ::isatty(STDERR_FILENO) == 1, .clock = {}});
}
