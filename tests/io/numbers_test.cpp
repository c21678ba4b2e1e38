// Tests of the numbers for people: meaningful digits, no exponents, integers kept whole.
#include "ppsim/io/numbers.hpp"

#include <catch2/catch.hpp>
#include <limits>

using namespace ppsim;

TEST_CASE("human_number keeps the digits that mean something and never an exponent", "[io]") {
  CHECK(human_number(54) == "54");
  CHECK(human_number(48.0) == "48");
  CHECK(human_number(18944.653363) == "18944.7");
  CHECK(human_number(4.1943e7) == "41943000");
  CHECK(human_number(27.333333) == "27.33");
  CHECK(human_number(2.5) == "2.5");
  CHECK(human_number(1.23456) == "1.235");
  CHECK(human_number(0.5) == "0.5");
  CHECK(human_number(0.123456) == "0.1235");
  CHECK(human_number(0.0015) == "0.0015");
  CHECK(human_number(0.000012346) == "0.00001235");
  CHECK(human_number(-3.14159) == "-3.142");
  CHECK(human_number(-0.00001) == "-0.00001");
  CHECK(human_number(0) == "0");
  CHECK(human_number(-1e-30) == "0");  // below the 12 decimals shown: no "-0"
  CHECK(human_number(99.999) == "100");
  CHECK(human_number(std::numeric_limits<double>::infinity()) == "inf");
}

TEST_CASE("human_ms rounds ticks as human_number, and bytes, counts and percentages", "[io]") {
  CHECK(human_ms(54'000'000) == "54");
  CHECK(human_ms(18'944'653'363) == "18944.7");
  CHECK(human_ms(1'500) == "0.0015");
  CHECK(human_bytes(4.1943e7) == "40.0 MiB");
  CHECK(human_bytes(512) == "512 B");
  CHECK(human_bytes(3.0 * 1024 * 1024 * 1024) == "3.0 GiB");
  CHECK(human_count(1.48e9) == "1.48B");
  CHECK(human_count(175e9) == "175B");
  CHECK(human_count(999) == "999");
  CHECK(human_percent(0.11111) == "11.11%");
  CHECK(human_percent(0) == "0.00%");
}
