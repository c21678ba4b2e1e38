// libFuzzer target: ppsim.model/1 files.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/model_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  ModelSpec m;
  if (fuzz::accepted([&] { m = parse_model_json(fuzz::as_text(data, size), "fuzz.json"); }))
    fuzz::expect(fuzz::accepted([&] { check_model(m, "fuzz.json"); }),
                 "an accepted model fails check_model");
  return 0;
}
