// The size and range limits of every input, in one place: checked before anything proportional
// to them is allocated.
#pragma once

namespace ppsim::limits {

inline constexpr int kMaxDevices = 4096;
inline constexpr int kMaxMicrobatches = 1'000'000;
/// Stages x micro-batches of one schedule (each holds up to three parts: F, B, W).
inline constexpr long long kMaxStageMicrobatches = 50'000'000;
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

} // namespace ppsim::limits
