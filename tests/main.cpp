// The Catch2 main: kept alone in one file so that the heavy header compiles once. The tests run
// the whole command line in-process (cli/full_parts.cpp linked in, as in ppsim-full).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cli/cli.hpp"

int main(int argc, char* argv[]) {
  ppsim::link_full_parts();
  return Catch::Session().run(argc, argv);
}
