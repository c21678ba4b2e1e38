#include <catch2/catch.hpp>
#include "schedules/registry.hpp"
#include "sim/simulator.hpp"
#include "sim/metrics.hpp"
#include "sim/validate.hpp"
#include <iostream>
using namespace ppsim;
TEST_CASE("scratch") {
  for (auto name : {"gpipe","1f1b","zb-h1","zb-h2"}) {
    for (auto costs : {"F=2,B=2,W=2", "F=1,B=1,W=1", "F=1,B=2,W=1", "F=3,B=2,W=1","F=1,B=1,W=1,comm=0.5", "F=2,B=2,W=2,comm=0.5"}) {
    auto s = make_schedule(name, {4, 8});
    REQUIRE(validate(s).empty());
    auto c = cost_model_for(parse_costs(costs), s);
    auto t = simulate(s, c);
    auto m = measure(t, s, c);
    std::cout << name << " " << costs << " cost " << ticks_to_ms(m.cost) << " ideal " << ticks_to_ms(m.ideal) << " peak " << m.peak_memory;
    for (auto& d : m.per_device) std::cout << " " << d.peak_memory;
    std::cout << "\n";
    }
  }
}
