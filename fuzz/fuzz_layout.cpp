// libFuzzer target: Megatron's --pipeline-model-parallel-layout text; layout_text() of what is
// read reads back to the same layout.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/layout_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  Layout layout;
  if (!fuzz::accepted([&] { layout = parse_layout(fuzz::as_text(data, size), "--layout"); }))
    return 0;
  const std::string text = layout_text(layout);
  Layout back;
  fuzz::expect(fuzz::accepted([&] { back = parse_layout(text, "--layout"); }),
               "layout_text() does not read back");
  fuzz::expect(back == layout, "the layout round trip changed the layout");
  return 0;
}
