// Calibration: time the seed's MLP with real GEMMs on this CPU and turn it into a cost file.
#pragma once

#include "model/mlp.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/progress.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim::calibrate {

/// The largest buffer total a calibration allocates; larger requests fail before allocating.
inline constexpr double kMaxCalibrationBytes = 8.0 * 1024 * 1024 * 1024;

/// What to calibrate: the MLP of each stage and how to time it.
struct CalibrationOptions {
  int dim{0};
  int tokens{0};                      ///< rows of a micro-batch (micro-batch size × sequence length)
  std::vector<int> blocks_per_stage;  ///< MLP blocks of each stage (one entry per stage)
  int threads{1};                     ///< GEMM threads: 1 = one core per simulated device
  int repeats{0};  ///< timed runs per kind; 0 = about 1 s of timing, then the RepeatRule
  std::string dtype{"f32"};           ///< f32 or bf16
  std::optional<double> comm_ms;      ///< overrides the measured per-edge estimate
  /// Sets of activations the timing rotates over (all F, then all B, W, BW): 1 times each kind
  /// back to back on one micro-batch's buffers (hot caches); `ppsim execute` passes the most
  /// micro-batches a device holds, so kernels are timed as its pipeline runs them.
  int slots{1};

  friend bool operator==(const CalibrationOptions&, const CalibrationOptions&) = default;
};

/// Parses `dim=1024,tokens=2048,blocks=2[,stages=4,threads=1,repeats=9,dtype=f32,comm=0.05]`;
/// `blocks=3:2:2:3` gives one count per stage. Validates like validate_options.
///
///   auto o = parse_calibration_spec("dim=512,tokens=512,blocks=2,stages=4");
[[nodiscard]] CalibrationOptions parse_calibration_spec(std::string_view text);

/// Throws ConfigError naming the value when an option is out of range, the dtype is unknown, or
/// the buffers would exceed kMaxCalibrationBytes (checked before anything is allocated).
void validate_options(const CalibrationOptions& options);

/// Bytes of the largest stage's buffers (what a calibration allocates at most).
[[nodiscard]] double calibration_bytes(const CalibrationOptions& options);

/// Timing statistics of one kind over the repeats.
struct KernelStats {
  double median_ms{0};
  double min_ms{0};
  double max_ms{0};
  double spread{0};  ///< (max − min) / median
  double gflops{0};  ///< FLOPs / median time
  int samples{0};
  double noise{0};  ///< interquartile range / median (what RepeatRule::noisy_spread is against)
};

/// F, B, W and the fused BW timed on a stage of `blocks` blocks.
struct BlockMeasurement {
  int blocks{0};
  double flops{0};  ///< per kind: 16·T·D² per block
  KernelStats F, B, W, BW;
  int extra_rounds{0};  ///< rounds added by the repeat rule because the timings were noisy
  bool capped{false};   ///< the repeat rule stopped at its time or sample cap, not on a stable median
};

/// When timings are noisy and how long an automatic calibration (repeats = 0) repeats them.
/// After the first repeats, a kind is noisy when its interquartile range exceeds
/// `noisy_spread` of its median (judged from `min_judged` samples or more). While some kind is
/// noisy, another round of half as many repeats again (at least 5) is timed, until the median of
/// every noisy kind moved by at most `stable_change` over the last round, or `time_cap_ms` of
/// timing or `max_samples` samples per kind are reached. A kind still noisy at the end is a
/// warning (also with --repeats N, which adds no rounds).
struct RepeatRule {
  double noisy_spread{0.05};
  double stable_change{0.01};
  double time_cap_ms{10000};
  int max_samples{1001};
  int min_judged{5};
};

/// Interquartile range / median of the samples (linear interpolation between order
/// statistics); 0 with fewer than two samples or a median of 0.
[[nodiscard]] double noise_of(std::vector<double> samples);

/// The median of the samples (the mean of the middle two for an even count); 0 when empty.
[[nodiscard]] double median_of(std::vector<double> samples);

/// What the repeat rule decides after a round.
struct RepeatDecision {
  enum class Verdict : std::uint8_t { quiet, stable, more, capped } verdict{Verdict::quiet};
  int extra{0};  ///< with `more`: samples per kind to add
};

/// The repeat rule as a pure function: `samples` per kind so far, `previous_medians` the
/// medians before the last round (empty after the first), `elapsed_ms` the timing spent.
/// quiet: no kind is noisy; stable: every noisy kind's median moved by at most stable_change;
/// capped: noisy and unsettled, but a cap is reached; more: time `extra` more per kind.
[[nodiscard]] RepeatDecision decide_repeats(const std::vector<std::vector<double>>& samples,
                                            const std::vector<double>& previous_medians,
                                            double elapsed_ms, const RepeatRule& rule = {});

/// The warning of a measurement whose kinds are still noisy under `rule` (none when quiet), one
/// line: `timings are noisy: B 12%, W 9% of 2 blocks over 57 samples (3 extra rounds)
/// (interquartile range / median over 5%); costs may be off as much: ...`. A
/// calibration of several stage sizes says it once, with each size's noisy kinds.
[[nodiscard]] std::vector<std::string> noise_warnings(const BlockMeasurement& m,
                                                      const RepeatRule& rule = {});

/// The split backward checked against a double-precision full backward and finite differences.
struct GradientCheck {
  int dim{0};
  int tokens{0};
  int blocks{0};
  std::string dtype{"f32"};
  double max_rel_error{0};     ///< split B + W vs the double reference (all dW and dx)
  double fd_max_rel_error{0};  ///< finite-difference probes vs the split gradients
  double tolerance{0};
  int fd_probes{0};
  bool passed{false};
};

/// The per-edge transfer time, estimated as a memory copy of one activation (T × D values).
struct CommEstimate {
  double bytes{0};
  double measured_ms{0};
  double gbytes_per_s{0};
  bool overridden{false};
  double used_ms{0};  ///< what the cost file's `comm` holds
};

/// One stage of the cost file.
struct StageResult {
  int blocks{0};
  double F_ms{0}, B_ms{0}, W_ms{0}, BW_ms{0};
  double MB{0}, MW{0};  ///< in M_B units
  double MB_bytes{0}, MW_bytes{0};
  /// The message F sends to the next stage (its output, tokens x dim) and B sends back (the
  /// input gradient, the same shape), in bytes.
  double act_bytes{0}, grad_bytes{0};
};

/// Where the numbers came from.
struct MachineInfo {
  std::string cpu_model;
  int logical_cpus{0};
  std::string onednn_version;
  std::string isa;
  std::string gemm;  ///< dnnl_sgemm, or the matmul implementation(s)
  double load_average{-1};  ///< 1-minute load average while timing (/proc/loadavg), -1 unknown
};

/// Everything a cost file holds.
struct CalibrationResult {
  CalibrationOptions options;
  int repeats{0};
  int warmups{0};
  std::vector<BlockMeasurement> measurements;  ///< one per distinct block count, stage order
  std::vector<StageResult> stages;
  double memory_unit_bytes{0};  ///< M_B: bytes stage 0 keeps per micro-batch after F
  CommEstimate comm;
  GradientCheck gradient_check;
  MachineInfo machine;
  std::vector<std::string> warnings;  ///< noisy timings (noise_warnings of each measurement)
};

/// Options for check_gradients; the defaults are what run_calibration uses.
struct GradientCheckOptions {
  DType dtype{DType::f32};
  int fd_probes_per_tensor{2};
  bool seed_bug{false};  ///< reproduce the seed's unchained backward (the check must fail)
  std::uint64_t seed{7};
};

/// Runs F, then the split B and W, of a `blocks`-block stage under an MSE loss and compares
/// every weight gradient and the input gradient with a double-precision full backward, and
/// probes the loss by central finite differences.
[[nodiscard]] GradientCheck check_gradients(int dim, int tokens, int blocks,
                                            const GradientCheckOptions& options = {});

/// The shape the gradient check uses before timing (small, with awkward sizes).
inline constexpr int kCheckDim = 40;
inline constexpr int kCheckTokens = 24;

/// Validates, checks gradients (InfeasibleError when they are wrong: the kernels cannot be
/// trusted on this machine), then times F, B, W and BW of every distinct stage and the comm copy.
///
///   auto r = run_calibration(parse_calibration_spec("dim=512,tokens=512,blocks=2"));
///   write_file_atomically("costs.json", [&](std::ostream& o) { o << cost_file_json(r); });
[[nodiscard]] CalibrationResult run_calibration(const CalibrationOptions& options,
                                                Progress* progress = nullptr);

/// The `ppsim.costs/1` document, pretty-printed, keys in a fixed order, ending in a newline.
[[nodiscard]] std::string cost_file_json(const CalibrationResult& result);

/// The costs the simulator uses: equal to parse_cost_json(cost_file_json(r)) but for `source`.
[[nodiscard]] CostSpec to_cost_spec(const CalibrationResult& result);

/// A short human-readable table of the result (for the command line without --json); the
/// warnings are not in it (the command line prints them to stderr).
[[nodiscard]] std::string calibration_summary(const CalibrationResult& result);

/// The CPU model from /proc/cpuinfo (with family/model numbers), or "unknown".
[[nodiscard]] std::string cpu_model();

/// Runs a calibration given as `dim=..,tokens=..,blocks=..` (--calibrate) and returns its costs;
/// the warnings (noisy timings) are appended to `warnings` when given.
[[nodiscard]] CostSpec calibrated_costs(std::string_view spec_text,
                                        std::vector<std::string>* warnings = nullptr,
                                        Progress* progress = nullptr);

} // namespace ppsim::calibrate
