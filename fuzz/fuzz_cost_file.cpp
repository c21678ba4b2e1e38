// libFuzzer target: ppsim.costs/1 files; what is read must be written and read back unchanged.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/cost_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  CostSpec spec;
  if (!fuzz::accepted([&] { spec = parse_cost_json(fuzz::as_text(data, size), "fuzz.json"); }))
    return 0;
  const std::string text = cost_spec_json(spec, "");
  CostSpec back;
  fuzz::expect(fuzz::accepted([&] { back = parse_cost_json(text, "fuzz.json"); }),
               "a written cost file does not read back");
  fuzz::expect(back == spec, "the cost file round trip changed the costs");
  return 0;
}
