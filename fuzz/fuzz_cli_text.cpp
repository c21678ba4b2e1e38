// libFuzzer target: the texts of the command line. The first byte picks the reader: --costs,
// --mem-limit's number-with-unit grammar and byte units, task text (`2F0`, `(0F7;7B3)`), sizes,
// integers, KEY=VALUE lists and the excerpts messages quote, --link and --slow.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/action_text.hpp"
#include "ppsim/io/comm_text.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/task.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 8) {
  case 0: {
    CostSpec spec;
    if (fuzz::accepted([&] { apply_costs(spec, text); }))
      for (const StageCosts& c : spec.stages)
        fuzz::expect(c.F >= 0 && c.B >= 0 && c.W >= 0 && std::isfinite(c.MB) && std::isfinite(c.MW),
                     "--costs accepted a negative time or an infinite memory");
    break;
  }
  case 1: {
    NumberWithUnit n;
    if (fuzz::accepted([&] { n = parse_number_with_unit(text, "--mem-limit"); })) {
      fuzz::expect(n.unit.size() <= text.size(), "a unit longer than its text");
      (void)byte_unit(n.unit);
    }
    break;
  }
  case 2: {
    Task t;
    if (fuzz::accepted([&] { t = parse_task(text); })) {
      Task back;
      fuzz::expect(fuzz::accepted([&] { back = parse_task(to_string(t)); }),
                   "to_string() of a task does not parse");
      fuzz::expect(back == t, "the task text round trip changed the task");
    }
    break;
  }
  case 3: {
    double bytes = 0;
    if (fuzz::accepted([&] { bytes = parse_bytes(text, "--mem-capacity"); }))
      fuzz::expect(std::isfinite(bytes) && bytes >= 1, "parse_bytes accepted a non-size");
    break;
  }
  case 4: {
    long long v = 0;
    if (fuzz::accepted([&] { v = parse_integer(text, "-p", -1000, 1000); }))
      fuzz::expect(v >= -1000 && v <= 1000, "parse_integer accepted a value out of its range");
    break;
  }
  case 6: {
    LinkModel link;
    if (fuzz::accepted([&] { link = parse_link(text); }))
      fuzz::expect(link.latency >= 0 && std::isfinite(link.bandwidth) && link.bandwidth >= 0,
                   "--link accepted a negative latency or a non-finite bandwidth");
    break;
  }
  case 7: {
    SlowDevice slow;
    if (fuzz::accepted([&] { slow = parse_slow(text); }))
      fuzz::expect(slow.factor > 0 && slow.factor <= limits::kMaxSlowFactor,
                   "--slow accepted a factor out of range");
    break;
  }
  default: {
    (void)fuzz::accepted([&] { for_each_key_value(text, "--calibrate", [](auto, auto) {}); });
    const std::string quoted = excerpt(text);
    fuzz::expect(quoted.size() <= 4 * limits::kMaxQuoted + 32, "an excerpt longer than its bound");
    break;
  }
  }
  return 0;
}
