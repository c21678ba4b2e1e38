// Shared by the fuzz targets: what "wrong" means. An input may be refused only with one of
// ppsim's errors (exit 2..5); anything else escaping (std::length_error, a json exception, ...)
// or a broken round trip is a finding, and aborts so that libFuzzer keeps the input.
#pragma once

#include "ppsim/sim/errors.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace ppsim::fuzz {

/// Aborts with `what` when `ok` is false.
inline void expect(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "ppsim fuzz: broken invariant: %s\n", what);
  std::abort();
}

/// Runs fn(); a ppsim::Error is a refusal (returns false), any other exception aborts.
template <class Fn> bool accepted(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const Error& e) {
    // Every message quotes a bounded excerpt of the input: inputs here are at most -max_len.
    expect(std::string_view(e.what()).size() < 64 * 1024, "an error message of 64 KB or more");
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ppsim fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace ppsim::fuzz
