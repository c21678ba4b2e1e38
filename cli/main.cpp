// The ppsim executable: hands its arguments to run_cli.
#include "cli/cli.hpp"

#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  return ppsim::run_cli(args, std::cout, std::cerr,
                        ppsim::Terminal{.err_is_terminal = ::isatty(STDERR_FILENO) == 1, .clock = {}});
}
