// The dependency rules of DESIGN.md in one place: what a task needs and what it produces.
#pragma once

#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/task.hpp"

#include <cstddef>

namespace ppsim {

/// A result a task produces: the F, B or W of one (stage, micro-batch). BW produces B and W,
/// FB its F and its backward half.
struct Part {
  Kind kind{Kind::F};  ///< F, B or W
  int stage{0};
  int microbatch{0};
};

/// Dense index of every part of a schedule, stage-major: the parts one device produces and
/// consumes in micro-batch order are neighbours in memory, which keeps the simulator's and the
/// validator's lookups in cache at a million tasks.
class PartIndex {
public:
  PartIndex(int stages, int microbatches)
      : stages_(static_cast<std::size_t>(stages < 0 ? 0 : stages)),
        microbatches_(static_cast<std::size_t>(microbatches < 0 ? 0 : microbatches)) {}
  [[nodiscard]] std::size_t operator()(const Part& p) const {
    const std::size_t k = p.kind == Kind::F ? 0 : p.kind == Kind::B ? 1 : 2;
    return (static_cast<std::size_t>(p.stage) * microbatches_ +
            static_cast<std::size_t>(p.microbatch)) * 3 + k;
  }
  [[nodiscard]] std::size_t size() const { return stages_ * microbatches_ * 3; }

private:
  std::size_t stages_;
  std::size_t microbatches_;
};

/// Dense index of a part (micro-batch-major), for arrays of size parts_size().
[[nodiscard]] inline std::size_t part_index(const Part& p, int stages) {
  const int k = p.kind == Kind::F ? 0 : p.kind == Kind::B ? 1 : 2;
  return (static_cast<std::size_t>(p.microbatch) * static_cast<std::size_t>(stages) +
          static_cast<std::size_t>(p.stage)) * 3 + static_cast<std::size_t>(k);
}
[[nodiscard]] inline std::size_t parts_size(int stages, int microbatches) {
  return static_cast<std::size_t>(stages) * static_cast<std::size_t>(microbatches) * 3;
}

/// Calls fn(Part) for each part a simple task (F, B, W or BW) produces.
// NOTE: these walks are always inlined: validate() calls them per task and an outlined copy
// per lambda costs a third of its time at a million tasks.
template <class Fn>
[[gnu::always_inline]] inline void for_each_product_simple(Kind kind, int stage, int mb, Fn&& fn) {
  switch (kind) {
  case Kind::F: fn(Part{Kind::F, stage, mb}); break;
  case Kind::B: fn(Part{Kind::B, stage, mb}); break;
  case Kind::W: fn(Part{Kind::W, stage, mb}); break;
  case Kind::BW:
    fn(Part{Kind::B, stage, mb});
    fn(Part{Kind::W, stage, mb});
    break;
  case Kind::FB: break;
  }
}

/// Calls fn(Part) for each part the task produces (both halves of an FB).
template <class Fn>
[[gnu::always_inline]] inline void for_each_product(const Task& t, Fn&& fn) {
  for_each_half(t, [&](Kind kind, int stage, int mb) { for_each_product_simple(kind, stage, mb, fn); });
}

/// Calls fn(Part) for each part a simple task needs: F(r_k) needs F(r_k-1); B and BW need the
/// B of the next stage on the route and their own F; W needs its B.
template <class Fn>
[[gnu::always_inline]] inline void for_each_dependency_simple(const Topology& topo, Kind kind,
                                                              int stage, int mb, Fn&& fn) {
  switch (kind) {
  case Kind::F: {
    const int prev = topo.prev_stage(mb, stage);
    if (prev >= 0) fn(Part{Kind::F, prev, mb});
    break;
  }
  case Kind::B:
  case Kind::BW: {
    const int next = topo.next_stage(mb, stage);
    if (next >= 0) fn(Part{Kind::B, next, mb});
    fn(Part{Kind::F, stage, mb});
    break;
  }
  case Kind::W: fn(Part{Kind::B, stage, mb}); break;
  case Kind::FB: break;
  }
}

/// Calls fn(Part) for each part a task needs; an FB needs what both halves need.
template <class Fn>
[[gnu::always_inline]] inline void for_each_dependency(const Topology& topo, const Task& t,
                                                       Fn&& fn) {
  for_each_half(t, [&](Kind kind, int stage, int mb) {
    for_each_dependency_simple(topo, kind, stage, mb, fn);
  });
}

} // namespace ppsim
