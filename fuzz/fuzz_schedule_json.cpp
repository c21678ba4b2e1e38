// libFuzzer target: ppsim.schedule/1 files, then validate, simulate and both writers.
#include "fuzz/fuzz_schedule_round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  Schedule s;
  if (fuzz::accepted([&] { s = parse_schedule_json(fuzz::as_text(data, size), "fuzz.json"); }))
    fuzz::check_schedule_round_trip(s, size);
  return 0;
}
