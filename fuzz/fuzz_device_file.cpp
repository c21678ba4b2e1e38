// libFuzzer target: ppsim.device/1 files.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/device_file.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  DeviceSpec d;
  if (!fuzz::accepted([&] { d = parse_device_json(fuzz::as_text(data, size), "fuzz.json"); }))
    return 0;
  for (const double x : {d.peak_tflops, d.efficiency_F, d.efficiency_B, d.efficiency_W,
                         d.memory_gib, d.link_latency_ms, d.link_gbytes_per_s, d.hbm_gbytes_per_s,
                         d.hbm_efficiency, d.kernel_overhead_us, d.tp_link_gbytes_per_s})
    fuzz::expect(std::isfinite(x) && x >= 0, "an accepted device has a negative or infinite value");
  return 0;
}
