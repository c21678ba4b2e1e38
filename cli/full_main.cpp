// ppsim-full: every command, with oneDNN, Open MPI and the HTTP server linked. The `ppsim` front
// runs it for the command lines that need them (calibrate, execute, serve, --calibrate, --device
// cpu, the help of all commands); it is also a complete ppsim on its own.
#include "cli/cli.hpp"

#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  ppsim::link_full_parts();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return ppsim::run_cli(args, std::cout, std::cerr,
                        ppsim::Terminal{.err_is_terminal = ::isatty(STDERR_FILENO) == 1, .clock = {}});
}
