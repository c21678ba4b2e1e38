// libFuzzer target: ppsim.baseline/1 files, approved or not; the writer's output reads back to
// the same file.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/baseline_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  if (size == 0) return 0;
  const bool require_expected = (data[0] & 1) != 0;
  Baseline b;
  if (!fuzz::accepted([&] {
        b = parse_baseline_json(fuzz::as_text(data + 1, size - 1), "fuzz.json", require_expected);
      }))
    return 0;
  const std::string text = baseline_json(b);
  Baseline back;
  fuzz::expect(fuzz::accepted([&] { back = parse_baseline_json(text, "fuzz.json", require_expected); }),
               "a written baseline does not read back");
  fuzz::expect(baseline_json(back) == text, "the baseline round trip changed the file");
  return 0;
}
