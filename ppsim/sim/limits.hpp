// The size and range limits of every input, in one place: checked before anything proportional
// to them is allocated. README.md ("Reliability") lists them with what each bad input gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace ppsim::limits {

inline constexpr int kMaxDevices = 4096;
/// Layers of a model (a model file's `layers`, a --recompute full:N).
inline constexpr int kMaxLayers = 4096;
/// Data-parallel replicas (--dp): a million, beyond any cluster; dp x tp stays far inside an int.
inline constexpr int kMaxReplicas = 1 << 20;
/// The tolerance of every memory-limit comparison (run_request's check, the generators', the
/// lower bound's and the branch and bound's), M_B units.
inline constexpr double kMemEps = 1e-9;
/// Virtual stages of one schedule (a schedule file's `stages`, a task's stage index).
inline constexpr int kMaxStages = 65'536;
inline constexpr int kMaxMicrobatches = 1'000'000;
/// Sequence slices per micro-batch (Seq1F1B: --slices).
inline constexpr int kMaxSlices = 64;
/// Tokens per sequence of a model (a model file's seq, --seq).
inline constexpr int kMaxSeq = 1 << 22;
/// Stages x micro-batches of one schedule (each holds up to three parts: F, B, W). The
/// simulator's tables are proportional to it: at this limit a run needs about 1.5 GB (a V or
/// two-replica schedule, with two stages per device, up to twice that).
inline constexpr long long kMaxStageMicrobatches = 4'194'304;
/// Routes of one schedule, and routes x stages (the topology's table of positions).
inline constexpr int kMaxRoutes = 4096;
inline constexpr long long kMaxRouteStages = 4'194'304;
/// The largest time any input may give, in milliseconds.
inline constexpr double kMaxMs = 1e12;
/// The largest message a stage may send (act_bytes, grad_bytes), in bytes.
inline constexpr double kMaxMessageBytes = 1e15;
/// The largest slow-down factor of a device (--slow) or a stage (a cost file's `factor`).
inline constexpr double kMaxSlowFactor = 1e6;
/// The largest coefficient of variation of --jitter.
inline constexpr double kMaxJitterCv = 10;
/// The most samples of --samples, and the most task runs all samples together may simulate
/// (samples x tasks of the simulated schedule, x2 with --iterations).
inline constexpr int kMaxSamples = 1'000'000;
inline constexpr long long kMaxSampledTasks = 500'000'000;

/// The most nanoseconds the durations and messages of one run may add up to (a quarter of the
/// range of Ticks, about 73 years): no time the engine computes exceeds that sum, so a sum or a
/// difference of two of them cannot overflow. Each input time is bounded by kMaxMs, but a
/// million of them are not.
inline constexpr std::int64_t kMaxTotalTicks = std::numeric_limits<std::int64_t>::max() / 4;
/// The largest memory any input may give in M_B units (MB, MW, a memory limit): beyond it a
/// device's running sum would no longer be a finite number.
inline constexpr double kMaxMemoryUnits = 1e12;
/// The largest byte count any input may give (memory_unit_bytes, --mem-capacity, 3GiB).
inline constexpr double kMaxBytes = 1e18;

/// Bytes of one input file (or of a FIFO, a device): read no further. A parsed JSON document
/// takes up to about 30 times its bytes (a file of empty arrays), so about 1 GB at this limit;
/// a schedule file this large holds about 3 M tasks.
inline constexpr std::size_t kMaxInputBytes = 32u << 20;
/// Decompressed bytes of one measured trace (`ppsim import`): read streaming, so memory grows
/// with the pipeline actions kept, not with the file; real profiler traces are 0.1 to 1 GB.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{8} << 30;
/// Milliseconds that reading a FIFO, pipe or device (or writing one) may wait for the other
/// side, in all: nothing that has no writer (or no reader) makes ppsim wait forever.
inline constexpr int kMaxStreamWaitMs = 5000;
/// How deeply a JSON document may nest arrays and objects.
inline constexpr int kMaxJsonDepth = 64;
/// Points of one sweep (each is a whole simulation).
inline constexpr long long kMaxSweepPoints = 100'000;
/// The most threads a command may be told to start (`sweep --threads`).
inline constexpr int kMaxThreads = 1024;
/// Units of work one automatic generator may spend on one schedule (a unit: a task placed by
/// one pass of a heuristic, a slot replayed by V-Half's and V-Min's squeeze): a search that
/// reaches it keeps the best it found (the run says so, with its gap to the lower bound); a
/// construction that needs more is refused. About 10 to 30 s on this project's machine.
inline constexpr long long kMaxSearchWork = 100'000'000;
/// Tasks that all the runs of one sweep or one plan may simulate together (estimated before
/// any runs: points x devices x chunks x micro-batches x 3, an automatic schedule's search
/// counted as kSearchWeight runs): about 20 to 30 s on this project's 2-core machine.
inline constexpr long long kMaxCommandTasks = 500'000'000;
inline constexpr long long kSearchWeight = 20;

/// Problems of one schedule that validate() describes; the rest are only counted.
inline constexpr std::size_t kMaxReportedProblems = 40;
/// Characters of the input that one message quotes (a cell, a key, a value); longer texts are
/// cut with their length named.
inline constexpr std::size_t kMaxQuoted = 60;
/// Characters of a name inside an input file (a schedule's, a case's, a model's, a device's):
/// it is printed in tables, traces and messages.
inline constexpr std::size_t kMaxNameChars = 256;

} // namespace ppsim::limits
