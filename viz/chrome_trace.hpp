// Chrome Trace Event Format writer: a run as slices, flows, memory counters for Perfetto.
#pragma once

#include "sim/run.hpp"

#include <ostream>

namespace ppsim {

/// Chrome Trace Event Format (JSON object form) of one run.
///
///   std::ofstream f("trace.json");
///   write_chrome_trace(f, run_schedule(make_schedule("zb-h1", {4, 8}), parse_costs("F=1")));
///
/// One process per device with a "compute" thread (tid 0) and, when it sends messages that take
/// time, a "comm" thread (tid 1). Every task is a complete ("X")
/// event named like `F3`, `B3`, `W3`, `BW3` (`F3.c1` when a device holds several chunks; an FB is
/// `F3+B1`), with `cat` = its kind and args {task, stage, chunk, microbatch, kind} (an FB adds
/// the backward_* of its second half). Every cross-device message is a flow: `s` on the sender
/// at the producer's end, `f` with `bp:"e"` on the receiver at the consumer's start, named like
/// `F3 -> stage 2`, cat "comm", id = its index in timeline.comms; a message that takes time is
/// also a slice of that name on the sender's "comm" track (tid 1) from when the link takes it
/// to its arrival, args {to_device, bytes, queued_us when it waited for the link}. Memory is a
/// counter
/// "activation memory" {M_B} per device (plus "activation memory (bytes)" {bytes} when the cost
/// model knows bytes). `otherData` holds the parameters and the metrics. ts/dur are exact
/// microseconds. Within a device, events are in time order; at one time a flow start comes
/// before the next slice and a flow end right after its slice, so viewers bind both to the
/// right slices.
void write_chrome_trace(std::ostream& out, const Run& run);

} // namespace ppsim
