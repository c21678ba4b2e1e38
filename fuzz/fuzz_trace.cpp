// libFuzzer target: measured traces (Chrome-trace JSON of Kineto or ppsim, Megatron's timer
// dumps); the first byte picks the format and the file name, so every reader is reached.
#include "fuzz/fuzz_check.hpp"
#include "ppsim/io/trace_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ppsim;
  if (size == 0) return 0;
  static const char* const names[] = {"rank0.json", "event_times_PP1_VPP1_rank_0_pp_rank_0.json",
                                      "trace.json", "rank-3.pt.trace.json"};
  static const TraceFormat formats[] = {TraceFormat::automatic, TraceFormat::megatron_timers,
                                        TraceFormat::kineto, TraceFormat::ppsim};
  ImportOptions o;
  o.format = formats[data[0] % 4];
  const std::string text(fuzz::as_text(data + 1, size - 1));
  ImportedTrace t;
  if (!fuzz::accepted([&] { t = parse_traces({text}, {names[(data[0] >> 2) % 4]}, o); }))
    return 0;
  fuzz::expect(t.ranks >= 1, "an accepted trace has a rank");
  for (const MeasuredAction& a : t.actions) {
    fuzz::expect(a.rank >= 0 && a.rank < t.ranks, "an action's rank is one of the ranks");
    fuzz::expect(a.end >= a.start, "an action ends after it starts");
  }
  return 0;
}
