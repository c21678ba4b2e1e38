// Tests of the hand-written JSON text helpers: string escaping and shortest round-trip numbers.
#include "ppsim/io/json_text.hpp"

#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

using namespace ppsim;
using nlohmann::json;

TEST_CASE("JSON strings are quoted and escaped", "[io]") {
  std::string s;
  append_json_string(s, "a\"b\\c\nd\te\x01g\x1f/\xc3\xa9");
  CHECK(s == "\"a\\\"b\\\\c\\nd\\te\\u0001g\\u001f/\xc3\xa9\"");
  CHECK(json::parse(s).get<std::string>() == "a\"b\\c\nd\te\x01g\x1f/\xc3\xa9");
  std::string r;
  append_json_string(r, "\r");
  CHECK(r == "\"\\u000d\"");
  std::string e;
  append_json_string(e, "");
  CHECK(e == "\"\"");
}

TEST_CASE("JSON numbers are the shortest round-trip text and never nan or inf", "[io]") {
  CHECK(json_number(1.5) == "1.5");
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(3.0) == "3");
  CHECK(json_number(-2.25) == "-2.25");
  CHECK(json_number(-0.0) == "0");
  CHECK(json_number(1.0 / 3.0) == "0.3333333333333333");
  CHECK(json::parse(json_number(1e300)).get<double>() == 1e300);
  CHECK(json::parse(json_number(1e-7)).get<double>() == 1e-7);
  CHECK_THROWS_AS(json_number(std::numeric_limits<double>::quiet_NaN()), std::logic_error);
  CHECK_THROWS_AS(json_number(std::numeric_limits<double>::infinity()), std::logic_error);
  CHECK_THROWS_AS(json_number(-std::numeric_limits<double>::infinity()), std::logic_error);
}
