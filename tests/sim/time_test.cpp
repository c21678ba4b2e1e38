// Tests of the time type: conversions from milliseconds and the exact decimal text of ticks.
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/time.hpp"

#include <catch2/catch.hpp>
#include <limits>

using namespace ppsim;

TEST_CASE("ticks are written as exact microseconds", "[sim]") {
  CHECK(ticks_to_us_text(1500) == "1.5");
  CHECK(ticks_to_us_text(2000000) == "2000");
  CHECK(ticks_to_us_text(0) == "0");
  CHECK(ticks_to_us_text(1) == "0.001");
  CHECK(ticks_to_us_text(10) == "0.01");
  CHECK(ticks_to_us_text(999) == "0.999");
  CHECK(ticks_to_us_text(1001) == "1.001");
  CHECK(ticks_to_us_text(1234567) == "1234.567");
  CHECK(ticks_to_us_text(-1500) == "-1.5");
  CHECK(ticks_to_us_text(std::numeric_limits<Ticks>::max()) == "9223372036854775.807");
  CHECK(ticks_to_us_text(std::numeric_limits<Ticks>::min()) == "-9223372036854775.808");
  CHECK(ticks_to_ms_text(1500000) == "1.5");
  CHECK(ticks_to_ms_text(1) == "0.000001");
  CHECK(ticks_to_ms_text(54000000) == "54");
}

TEST_CASE("milliseconds convert to ticks rounded to the nearest nanosecond", "[sim]") {
  CHECK(ms_to_ticks(1.5, "x") == 1'500'000);
  CHECK(ms_to_ticks(0.0000004, "x") == 0);
  CHECK(ms_to_ticks(0.0000006, "x") == 1);
  CHECK(ticks_to_ms(2'500'000) == 2.5);
  CHECK(seconds_to_ticks(0.25) == 250'000'000);
  CHECK_THROWS_AS(ms_to_ticks(-1, "x"), ConfigError);
  CHECK_THROWS_AS(ms_to_ticks(std::numeric_limits<double>::quiet_NaN(), "x"), ConfigError);
  CHECK_THROWS_WITH(ms_to_ticks(2e12, "--costs F"), Catch::Contains("--costs F") &&
                                                        Catch::Contains("too large"));
}
