// Simulates ZB-H1 at the toy case through the installed library and prints its cost (54).
#include <ppsim/ppsim.hpp>

#include <iostream>

int main() {
  const ppsim::Schedule s = ppsim::make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
  const ppsim::Run r = ppsim::run_schedule(s, ppsim::parse_costs("F=2,B=2,W=2"));
  std::cout << ppsim::ticks_to_ms_text(r.metrics.cost) << "\n";
  return 0;
}
