// Placeholder, replaced below.
#include "cli/cli.hpp"
#include <ostream>
namespace ppsim {
int run_cli(const std::vector<std::string>&, std::ostream&, std::ostream&) { return 0; }
}
