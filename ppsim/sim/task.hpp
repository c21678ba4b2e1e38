// Tasks: what a device executes (F, B, W, the fused BW, the overlapped FB) and their text form.
#pragma once

#include "ppsim/sim/time.hpp"

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace ppsim {

/// F forward; B backward for the input (PyTorch's "I"); W backward for the weights;
/// BW the fused full backward (PyTorch's "B"); FB an F and a B/BW overlapped on one device.
enum class Kind : std::uint8_t { F, B, W, BW, FB };

[[nodiscard]] std::string_view kind_name(Kind kind);

/// One unit of work on one stage for one micro-batch. An FB task also carries its backward half
/// (kind2 is B or BW on stage2 for microbatch2); the other tasks leave those fields at defaults.
struct Task {
  Kind kind{Kind::F};
  int stage{0};
  int microbatch{0};
  Kind kind2{Kind::B};
  int stage2{-1};
  int microbatch2{-1};

  friend auto operator<=>(const Task&, const Task&) = default;

  [[nodiscard]] static constexpr Task make(Kind kind, int stage, int microbatch) {
    return Task{kind, stage, microbatch, Kind::B, -1, -1};
  }
  /// The F of (f_stage, f_mb) overlapped with the backward (B or BW) of (b_stage, b_mb).
  [[nodiscard]] static constexpr Task overlapped(int f_stage, int f_mb, Kind backward, int b_stage,
                                                 int b_mb) {
    return Task{Kind::FB, f_stage, f_mb, backward, b_stage, b_mb};
  }
};

/// Calls fn(kind, stage, microbatch) for each simple half of a task: the task itself, or an
/// FB's forward and then its backward half.
template <class Fn>
[[gnu::always_inline]] inline void for_each_half(const Task& t, Fn&& fn) {
  if (t.kind == Kind::FB) {
    fn(Kind::F, t.stage, t.microbatch);
    fn(t.kind2, t.stage2, t.microbatch2);
  } else {
    fn(t.kind, t.stage, t.microbatch);
  }
}

/// Compact text form: `2F0` (stage 2, forward, micro-batch 0), `1B3`, `0W2`, `3BW1`, and
/// `(0F7;7B3)` for an FB; io/action_text's parse_task reads it back.
[[nodiscard]] std::string to_string(const Task& task);

/// The vocabularies a task can be written in: ppsim's (above); PyTorch's compute-only actions
/// (torch.distributed.pipelining: our B is its `I`, our BW its `B`, an FB is
/// `(0F7;7B3)OVERLAP_F_B`); and PyTorch's older one, from before `I` existed, where `B` was the
/// backward for the input and also the full backward (so both our B and our BW are `B`).
enum class Notation : std::uint8_t { ppsim, pytorch, pytorch_old };

/// The task in `notation`: to_string(t, Notation::pytorch) of our 1B3 is `1I3`.
[[nodiscard]] std::string to_string(const Task& task, Notation notation);

} // namespace ppsim
