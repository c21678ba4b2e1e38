// Helpers every test folder shares: the message of an expected error.
#pragma once

#include "sim/errors.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace ppsim::test {

/// The message of the E that fn() throws, or "(no error)" when it throws none (so a Contains
/// check on it fails and shows why).
template <class E = Error, class F> std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

/// The message of the E that fn() throws; the test fails when it throws none.
template <class E, class F> std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return {};
}

} // namespace ppsim::test
