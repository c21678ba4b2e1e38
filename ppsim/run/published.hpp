// Published measured training runs (ppsim.published/1) and what ppsim predicts for them: the
// check of the model-level costs (`ppsim validate-model`).
//
//   PublishedRuns runs = load_published("data/published/megatron-2021.json");
//   Validation v = validate_published(runs);
//   v.rows[0].predicted_tflops  // against v.rows[0].run.measured_tflops
#pragma once

#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// One measured run as its paper reports it.
struct PublishedRun {
  std::string name;
  std::string source;      ///< paper, table, hardware
  std::string config;      ///< where its configuration comes from (a script, a table)
  bool fit{false};         ///< used to fit the device's constants; otherwise held out to check
  ModelSpec model;         ///< with its micro-batch size and recomputation
  DeviceSpec device;
  std::string schedule;    ///< 1f1b, interleaved-1f1b, ...
  int chunks{0};           ///< model chunks per device (0 = the schedule's default)
  int tp{1}, pp{1}, gpus{1}, global_batch{1};
  bool sequence_parallel{false};
  bool overlap_grad_reduce{false};
  double measured_tflops{0};  ///< achieved TFLOP/s per GPU, by the paper's FLOP count

  /// Data-parallel replicas: gpus / (tp x pp).
  [[nodiscard]] int replicas() const { return gpus / (tp * pp); }
  /// Micro-batches per replica and iteration: global batch / (micro-batch size x replicas).
  [[nodiscard]] int microbatches() const {
    return static_cast<int>(global_batch / (static_cast<long long>(replicas()) * model.microbatch_size));
  }
};

struct PublishedRuns {
  std::string source;  ///< the file
  /// How the paper counts FLOPs: "narayanan2021" (96 B s l h^2 (1 + s / 6h + V / 16 l h),
  /// with the recomputed forward) or "model" (72 B s l h^2 (1 + s / 6h + V / 12 l h), without).
  std::string flops;
  std::vector<PublishedRun> runs;
};

/// Reads `{"schema": "ppsim.published/1", "flops": "narayanan2021"|"model", "runs": [{"name",
/// "source", "config", "use": "fit"|"check", "model": {ppsim.model/1}, "device": NAME|{ppsim.device/1},
/// "schedule", "chunks"?, "tp", "pp", "gpus", "global_batch", "sequence_parallel"?,
/// "overlap_grad_reduce"?, "measured": {"tflops_per_gpu"}}]}`, every size bounded and checked
/// (gpus a multiple of tp x pp, the global batch of micro-batches x replicas). ConfigError
/// naming the file and the JSON path.
[[nodiscard]] PublishedRuns parse_published_json(std::string_view text, std::string_view where);
[[nodiscard]] PublishedRuns load_published(const std::string& path);

/// The FLOPs of one iteration of `run` by the file's count.
[[nodiscard]] double published_flops(const PublishedRuns& runs, const PublishedRun& run);

struct ValidationRow {
  PublishedRun run;
  int dp{1}, microbatches{1};
  double iteration_ms{0};      ///< predicted: the pipeline, the gradient reduction, the step
  double predicted_tflops{0};  ///< the paper's FLOPs over the predicted time, per GPU
  double error{0};             ///< predicted / measured - 1
  double bubble_rate{0};
  double peak_gib{0};          ///< the fullest device's predicted memory
};

struct ValidationSummary {
  int count{0};
  double mean_abs_error{0};
  double max_abs_error{0};
};

struct Validation {
  std::vector<ValidationRow> rows;
  ValidationSummary fit, check;  ///< over the rows used to fit, and over those held out
};

/// Simulates every run as ppsim would be asked for it (--model, --device, --tp, --dp, -p,
/// -m = global batch / (micro-batch x replicas), the schedule and chunks, --recompute as the
/// model says) and compares.
[[nodiscard]] Validation validate_published(const PublishedRuns& runs);

} // namespace ppsim
