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

} // namespace ppsim::limits
