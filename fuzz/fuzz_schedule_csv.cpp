// libFuzzer target: PyTorch compute-only CSV schedules, then validate, simulate and both writers.
#include "fuzz/fuzz_schedule_round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  Schedule s;
  if (fuzz::accepted([&] { s = parse_pytorch_csv(fuzz::as_text(data, size), "fuzz.csv"); }))
    fuzz::check_schedule_round_trip(s, size);
  return 0;
}
