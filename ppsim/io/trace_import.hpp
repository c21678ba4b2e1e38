// Reading measured pipeline runs: PyTorch profiler (Kineto) traces, Megatron's per-micro-batch
// timer dumps and ppsim's own Chrome traces, into the tasks each rank ran and when.
//
//   ImportOptions o;                                  // --format auto
//   ImportedTrace t = read_traces({"rank0.json.gz", "rank1.json.gz"}, o);
//   t.actions[0]                                      // {rank 0, 0F0, start, end}
#pragma once

#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/task.hpp"
#include "ppsim/sim/time.hpp"

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// `--format`: what the files are. `automatic` looks at each file's first bytes.
enum class TraceFormat : std::uint8_t { automatic, kineto, megatron_timers, ppsim };

[[nodiscard]] std::string_view trace_format_name(TraceFormat format);
/// `auto`, `kineto`, `megatron-timers` or `ppsim`; ConfigError names the valid ones.
[[nodiscard]] TraceFormat parse_trace_format(std::string_view text);

/// One pipeline action a rank ran, on that rank's clock (ns from its trace's origin).
struct MeasuredAction {
  int rank{0};
  Task task;
  Ticks start{0};
  Ticks end{0};
};

/// A range that is no pipeline action but explains idle time: an optimizer step or a
/// synchronisation (`Optimizer.step#...`, a `--map ...=optimizer` range).
struct MeasuredSpan {
  int rank{0};
  std::string name;
  Ticks start{0};
  Ticks end{0};
};

/// The size of one message, where the trace says it: PyTorch's `PP:1SEND_F3` range around the
/// NCCL sends it issued (their `record_param_comms`: max(In, Out msg nelems) x the dtype's
/// bytes, summed), or a ppsim trace's message slices (args.bytes).
struct MeasuredMessage {
  Kind part{Kind::F};  ///< F: an activation sent forward; B: an input gradient sent back
  int stage{0};        ///< the stage that produced it
  int microbatch{0};
  double bytes{0};

  friend bool operator==(const MeasuredMessage&, const MeasuredMessage&) = default;
};

/// `--map REGEX=KIND`: event names that match REGEX (the whole name, ECMAScript syntax) are
/// actions of KIND (F, B, W, BW) or, for KIND `optimizer`, optimizer/synchronisation ranges.
/// Named groups `(?<stage>\d+)`, `(?<mb>\d+)` (required for an action) and `(?<chunk>\d+)`
/// (stage = chunk * ranks + rank, Megatron's interleaved placement) give the indices; without
/// stage or chunk the stage is the rank.
struct TraceMap {
  std::string text;  ///< as given, for messages
  std::regex pattern;
  bool optimizer{false};
  Kind kind{Kind::F};
  int stage_group{0};  ///< capture group numbers; 0 = absent
  int mb_group{0};
  int chunk_group{0};
};

/// Parses one `--map` text; ConfigError for a bad regex, kind or group set.
[[nodiscard]] TraceMap parse_trace_map(std::string_view text);

struct ImportOptions {
  TraceFormat format{TraceFormat::automatic};
  std::vector<TraceMap> maps;
  /// Which iteration of a trace that holds several (each action repeated): 0-based; nullopt =
  /// the last one that every rank completed (the first is usually a warm-up).
  std::optional<int> iteration;
  /// Decompressed bytes read from one file at most (limits::kMaxTraceBytes; tests set less).
  std::size_t max_bytes{limits::kMaxTraceBytes};
};

/// What the files held, every rank's clock as it was (alignment is ppsim/run/measured.hpp's).
struct ImportedTrace {
  std::string format;              ///< what was read: kineto, megatron-timers, ppsim
  std::vector<std::string> files;  ///< in rank order where the ranks came from files
  int ranks{0};
  std::vector<MeasuredAction> actions;  ///< ranked by (rank, start)
  std::vector<MeasuredSpan> spans;      ///< optimizer steps and synchronisations
  int iterations{1};                    ///< complete iterations found
  int iteration{0};                     ///< the one kept
  bool device_time{false};              ///< Kineto: GPU-side annotations (the device's clock)
  /// Sequence slices per micro-batch (a ppsim trace of a sliced run: its tasks' `slice` args);
  /// then a task's micro-batch is its unit, mb * slices + slice.
  int slices{1};
  /// The ranges of the trace that are pipeline actions of PyTorch's communication
  /// (SEND_F, RECV_B, ...) or sharding, counted and left out.
  std::size_t comm_actions_skipped{0};
  /// The messages whose sizes the trace gives, one per (part, stage, micro-batch) (the first
  /// iteration's where several repeat it), sorted by those.
  std::vector<MeasuredMessage> messages;
};

/// Reads every file (plain or .gz JSON, streamed: memory proportional to the actions kept,
/// not to the file; decompressed bytes bounded by limits::kMaxTraceBytes) as one measured run.
/// A rank is taken from the file (Kineto's distributedInfo.rank, a ppsim trace's devices,
/// Megatron's `pp_rank_N` file name), else from a `rank N` in the file name, else from the
/// order of the files. ConfigError names the file and what is wrong: unreadable, not JSON,
/// nested too deeply, too large, two files of one rank, ranks missing, no recognisable action
/// (then with the most frequent range names and a --map that would take them).
[[nodiscard]] ImportedTrace read_traces(const std::vector<std::string>& paths,
                                        const ImportOptions& options);

/// The same from texts in memory (tests, fuzzing): `names[i]` plays the file name of
/// `texts[i]` (ranks from names, format detection, messages).
[[nodiscard]] ImportedTrace parse_traces(const std::vector<std::string>& texts,
                                         const std::vector<std::string>& names,
                                         const ImportOptions& options);

} // namespace ppsim
