// libFuzzer target: PyTorch compute-only CSV schedules in either notation (the current one, and
// the old one where B was the backward for the input), then validate, simulate and both writers.
#include "fuzz/fuzz_schedule_round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  const PytorchNotation notation =
      (size / 3) % 2 == 0 ? PytorchNotation::current : PytorchNotation::old;
  Schedule s;
  const std::string_view text = fuzz::as_text(data, size);
  if (fuzz::accepted([&] { s = parse_pytorch_csv(text, "fuzz.csv", notation); }))
    fuzz::check_schedule_round_trip(s, size);
  return 0;
}
