// Chrome Trace Event Format writer: a run as slices, flows, memory counters for Perfetto.
#pragma once

#include "ppsim/sim/run.hpp"

#include <ostream>

namespace ppsim {

/// Chrome Trace Event Format (JSON object form) of one run.
///
///   std::ofstream f("trace.json");
///   write_chrome_trace(f, run_schedule(make_schedule("zb-h1", {4, 8}), parse_costs("F=1")));
///
/// One process per device, pid = device + 1 (Perfetto's importer treats pid 0 specially),
/// named "device 0", ..., with a thread "compute" (tid 0) and, when it sends messages that take
/// time, threads "comm" (tid 1), "comm 2" (tid 2) ... (a message in flight while an earlier one
/// still is takes the next free one: slices of one thread never overlap). Every task is a
/// complete ("X")
/// event named like `F3`, `B3`, `W3`, `BW3` (`F3.c1` when a device holds several chunks; an FB is
/// `F3+B1`), with `cat` = its kind and args {task, stage, chunk, microbatch, kind} (an FB adds
/// the backward_* of its second half). Every cross-device message is a flow named like
/// `F3 -> stage 2`, cat "comm", id = its index in timeline.comms: `s` 1 ns before the producer's
/// end and `f` (bp "e") 1 ns after the consumer's start, so each binds to its own slice and
/// never to the neighbour that ends or starts at the same time (a slice shorter than 2 ns has
/// no inner point: its flow sits at its edge, ordered before or after the neighbour). A message
/// that takes time is also a slice of that name, cat "comm", on its sender's comm track from
/// when the link takes it to its arrival, args {to_device, bytes, queued_us when it waited for
/// the link}. Memory is
/// a counter "activation memory" {M_B} per device (plus "activation memory (bytes)" {bytes}
/// when the cost model knows bytes). The parameters and the metrics are in `otherData` (for
/// chrome://tracing) and, since Perfetto drops otherData, the args of the one slice "run" of a
/// process "run" listed first. No displayTimeUnit (older Perfetto versions take it for the unit
/// of ts): ts and dur are exact microseconds. Within a device, events are in time order.
void write_chrome_trace(std::ostream& out, const Run& run);

} // namespace ppsim
