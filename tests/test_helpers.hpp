// Helpers every test folder shares: the message of an expected error.
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/time.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

namespace ppsim::test {

/// One millisecond in simulator ticks, for writing expected times as `54 * ms`.
inline constexpr Ticks ms = 1'000'000;

/// A committed example schedule file: data/examples/schedules/NAME.
inline std::string example_schedule(const std::string& name) {
  return std::string(PPSIM_SOURCE_DIR) + "/data/examples/schedules/" + name;
}

/// Wall seconds since `start` (the robustness tests bound how long a bad input may take).
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The message of the E that fn() throws, or "(no error)" when it throws none (so a Contains
/// check on it fails and shows why).
/// A device of round numbers for hand-worked times: 100 TFLOP/s at 50 %, 1000 GB/s of HBM at
/// 100 %, 200 GB/s of NVLink, 50 GB/s of InfiniBand, no fixed costs.
inline DeviceSpec round_device() {
  DeviceSpec d;
  d.name = "round";
  d.peak_tflops = 100;
  d.efficiency_F = d.efficiency_B = d.efficiency_W = 0.5;
  d.hbm_gbytes_per_s = 1000;
  d.hbm_efficiency = 1;
  d.kernel_overhead_us = 0;
  d.tp_link_gbytes_per_s = 200;
  d.link_gbytes_per_s = 50;
  d.link_latency_ms = 0;
  return d;
}

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
