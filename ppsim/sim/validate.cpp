// Static checks of schedules, bounded by what they report.
#include "ppsim/sim/validate.hpp"

#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <fmt/format.h>
#include <optional>
#include <unordered_map>

namespace ppsim {

namespace {

std::string part_name(const Part& q, Notation n) {
  return to_string(Task::make(q.kind, q.stage, q.microbatch), n);
}

// Collects problems: the first `describe` with their message (made only then), the rest counted.
class Collector {
public:
  Collector(Violations& out, std::size_t describe) : out_(out), describe_(describe) {}
  [[nodiscard]] bool full() const { return out_.first.size() >= describe_; }
  template <class What> void add(Slot at, What&& what) {
    ++out_.total;
    if (!full()) out_.first.push_back(Violation{at, what()});
  }
  void count(std::size_t more) { out_.total += more; }
  [[nodiscard]] std::size_t total() const { return out_.total; }

private:
  Violations& out_;
  std::size_t describe_;
};

// Where each part is produced. Dense (one entry per part the schedule declares) when the tasks
// produce about that many; a hash map otherwise, so that memory follows the tasks listed.
class PartTable {
public:
  struct Entry {
    Slot at{-1, -1};
    bool via_bw{false};
  };
  PartTable(std::size_t parts, std::size_t produced) : dense_(parts <= 4 * produced + 4096) {
    if (dense_) table_.resize(parts);
    else map_.reserve(produced);
  }
  [[nodiscard]] const Entry* find(std::size_t key) const {
    if (dense_) return table_[key].at.index >= 0 ? &table_[key] : nullptr;
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  /// Records the part; false (and nothing changed) when it is already there.
  bool insert(std::size_t key, Entry e) {
    if (dense_) {
      if (table_[key].at.index >= 0) return false;
      table_[key] = e;
      return true;
    }
    return map_.emplace(key, e).second;
  }
  /// fn(key, entry) for every part present.
  template <class Fn> void for_each(Fn&& fn) const {
    if (dense_) {
      for (std::size_t k = 0; k < table_.size(); ++k)
        if (table_[k].at.index >= 0) fn(k, table_[k]);
    } else {
      for (const auto& [k, e] : map_) fn(k, e);
    }
  }

private:
  bool dense_;
  std::vector<Entry> table_;
  std::unordered_map<std::size_t, Entry> map_;
};

// The parts a task produces (two for BW, the F and the backward of an FB).
std::size_t products(const Task& t) {
  std::size_t n = 0;
  for_each_product(t, [&](const Part&) { ++n; });
  return n;
}

// Structure: devices, placement, routes. Returns false when tasks cannot be checked further.
bool check_structure(const Schedule& s, Collector& out) {
  const std::size_t before = out.total();
  const auto add = [&](auto&& what) { out.add(Slot{0, -1}, what); };
  if (s.devices <= 0)
    add([&] { return fmt::format("needs at least one device (got devices={})", s.devices); });
  if (s.microbatches <= 0)
    add([&] {
      return fmt::format("needs at least one micro-batch (got microbatches={})", s.microbatches);
    });
  if (static_cast<int>(s.order.size()) != s.devices)
    add([&] {
      return fmt::format("has {} device task lists for devices={}", s.order.size(), s.devices);
    });
  if (s.stage_device.empty()) add([] { return std::string("has no stages"); });
  for (std::size_t st = 0; st < s.stage_device.size(); ++st)
    if (s.stage_device[st] < 0 || s.stage_device[st] >= s.devices)
      add([&] {
        return fmt::format("placement: stage {} on device {}, outside 0..{}", st,
                           s.stage_device[st], s.devices - 1);
      });
  if (s.routes.empty()) add([] { return std::string("has no routes"); });
  std::vector<bool> seen;
  for (std::size_t r = 0; r < s.routes.size(); ++r) {
    seen.assign(s.stage_device.size(), false);
    if (s.routes[r].empty()) add([&] { return fmt::format("route {} is empty", r); });
    for (int st : s.routes[r]) {
      if (st < 0 || st >= s.stages()) {
        add([&] {
          return fmt::format("route {} names stage {}, outside 0..{}", r, st, s.stages() - 1);
        });
      } else if (seen[ix(st)]) {
        add([&] { return fmt::format("route {} passes stage {} twice", r, st); });
      } else {
        seen[ix(st)] = true;
      }
    }
  }
  if (static_cast<int>(s.microbatch_route.size()) != s.microbatches)
    add([&] {
      return fmt::format("has {} micro-batch routes for microbatches={}",
                         s.microbatch_route.size(), s.microbatches);
    });
  if (s.slices < 1 || s.slices > limits::kMaxSlices)
    add([&] { return fmt::format("slices={}: must be in 1..{}", s.slices, limits::kMaxSlices); });
  else if (s.microbatches % s.slices != 0)
    add([&] {
      return fmt::format("microbatches={} is not a whole number of micro-batches of {} slices",
                         s.microbatches, s.slices);
    });
  for (std::size_t j = 0; j < s.microbatch_route.size(); ++j)
    if (s.microbatch_route[j] < 0 || s.microbatch_route[j] >= static_cast<int>(s.routes.size()))
      add([&] {
        return fmt::format("micro-batch {} on route {}, which does not exist", j,
                           s.microbatch_route[j]);
      });
  return out.total() == before;
}

// The parts the tasks of a schedule produce.
std::size_t produced_parts(const Schedule& s) {
  std::size_t produced = 0;
  for (const auto& row : s.order)
    for (const Task& t : row) produced += products(t);
  return produced;
}

// The checks of the tasks of a schedule whose structure holds, pass by pass, sharing where each
// part is produced and which cells are right on their own.
class TaskChecks {
public:
  TaskChecks(const Schedule& s, Collector& out)
      : s_(s), out_(out), topo_(s), S_(s.stages()), M_(s.microbatches), index_(S_, M_),
        made_(index_.size(), produced_parts(s)) {}

  void run() {
    check_cells();
    check_complete();
    check_device_order();
    if (s_.slices > 1) check_slices();
  }

private:
  // Tasks in the vocabulary of the schedule's file.
  [[nodiscard]] std::string text(const Task& t) const { return to_string(t, s_.notation); }
  [[nodiscard]] std::string part(const Part& q) const { return part_name(q, s_.notation); }
  // A part named by the task that makes it: in PyTorch's vocabulary one full backward `0B0`
  // makes both of ppsim's parts 0B0 and 0W0, so the file's name for either is its cell.
  [[nodiscard]] std::string made_by(const Part& q, const Slot& at) const {
    return s_.notation == Notation::ppsim ? part(q) : text(s_.order[ix(at.device)][ix(at.index)]);
  }

  // Pass 1: cells that are wrong on their own; record where each part is produced.
  void check_cells() {
    cell_ok_.resize(s_.order.size());
    for (std::size_t d = 0; d < s_.order.size(); ++d) {
      cell_ok_[d].assign(s_.order[d].size(), false);
      for (std::size_t i = 0; i < s_.order[d].size(); ++i) {
        const Slot at{static_cast<int>(d), static_cast<int>(i)};
        if (!cell_fits(s_.order[d][i], at)) continue;
        cell_ok_[d][i] = true;
        record_products(s_.order[d][i], at);
      }
    }
  }

  // Whether each half of the task at `at` names a stage and micro-batch that exist, on the
  // micro-batch's route, placed on its device; each problem added.
  bool cell_fits(const Task& t, const Slot& at) {
    const auto add = [&](auto&& what) { out_.add(at, what); };
    const auto d = static_cast<std::size_t>(at.device);
    bool ok = true;
    const auto check_half = [&](int stage, int mb) {
      if (stage < 0 || stage >= S_) {
        add([&] { return fmt::format("{}: stage {} outside 0..{}", text(t), stage, S_ - 1); });
        ok = false;
      } else if (mb < 0 || mb >= M_) {
        add([&] { return fmt::format("{}: micro-batch {} outside 0..{}", text(t), mb, M_ - 1); });
        ok = false;
      } else if (!topo_.on_route(mb, stage)) {
        add([&] {
          return fmt::format("{}: stage {} is not on the route of micro-batch {}", text(t),
                             stage, mb);
        });
        ok = false;
      } else if (s_.stage_device[ix(stage)] != static_cast<int>(d)) {
        add([&] {
          return fmt::format("{}: stage {} is placed on device {}, not on device {}", text(t),
                             stage, s_.stage_device[ix(stage)], d);
        });
        ok = false;
      }
    };
    if (t.kind == Kind::FB) {
      check_half(t.stage, t.microbatch);
      if (t.kind2 != Kind::B && t.kind2 != Kind::BW) {
        add([&] { return fmt::format("{}: the second half of an FB must be B or BW", text(t)); });
        ok = false;
      } else {
        check_half(t.stage2, t.microbatch2);
      }
    } else {
      check_half(t.stage, t.microbatch);
    }
    return ok;
  }

  // Records where the task's parts are produced; a part produced twice is a problem.
  void record_products(const Task& t, const Slot& at) {
    const bool is_bw = t.kind == Kind::BW || (t.kind == Kind::FB && t.kind2 == Kind::BW);
    std::optional<Slot> reported;  // the task this one duplicates, once per task named by cell
    for_each_product(t, [&](const Part& q) {
      const auto qi = index_(q);
      if (!made_.insert(qi, {at, is_bw && q.kind != Kind::F})) {
        const Slot first = made_.find(qi)->at;
        if (s_.notation != Notation::ppsim && reported == first) return;
        reported = first;
        out_.add(at, [&] {
          return fmt::format("{}: duplicate of {} (already at device {}, position {})", text(t),
                             made_by(q, first), first.device, first.index);
        });
      }
    });
  }

  // Pass 2: every (stage, micro-batch) on its route needs F, B and W exactly once, with B and W
  // either both from one BW or both separate. Pairs are visited in (micro-batch, position on
  // the route) order until the described problems are full; the pairs after that are counted
  // from the parts present, so the walk never visits more pairs than are described or complete.
  // NOTE: in PyTorch's vocabulary a backward is one action (its B) or two (I and W); a pair
  // that lacks both is one problem, told the one it most likely lost.
  void check_complete() {
    for (int j = 0; j < M_; ++j) {
      const auto& route = s_.routes[ix(s_.microbatch_route[ix(j)])];
      for (std::size_t k = 0; k < route.size(); ++k) {
        if (out_.full()) {
          count_incomplete_from(j, k);
          return;
        }
        describe_incomplete(route[k], j);
      }
    }
  }

  void describe_incomplete(int st, int j) {
    const bool one_backward = s_.notation != Notation::ppsim;
    const Part f{Kind::F, st, j}, b{Kind::B, st, j}, w{Kind::W, st, j};
    const Slot home{s_.stage_device[ix(st)], -1};
    const auto* be = made_.find(index_(b));
    const auto* we = made_.find(index_(w));
    const bool whole_backward = one_backward && be == nullptr && we == nullptr;
    for (const Part& q : {f, b, w}) {
      if (made_.find(index_(q)) != nullptr || (whole_backward && q.kind == Kind::W)) continue;
      out_.add(home, [&] {
        const std::string what =
            whole_backward && q.kind == Kind::B
                ? fmt::format("{} (or {} and {})", text(Task::make(Kind::BW, st, j)), part(b),
                              part(w))
                : part(q);
        return fmt::format("missing {} (device {})", what, home.device);
      });
    }
    if (be != nullptr && we != nullptr && be->via_bw != we->via_bw) {
      const Slot at = be->via_bw ? we->at : be->at;
      out_.add(at, [&] {
        return fmt::format("{} is fused, but {} is also scheduled on its own",
                           text(Task::make(Kind::BW, st, j)), be->via_bw ? part(w) : part(b));
      });
    }
  }

  // The problems of the pairs from position `stop_k` of micro-batch `stop_j`'s route on,
  // counted from the parts present.
  void count_incomplete_from(int stop_j, std::size_t stop_k) {
    const bool one_backward = s_.notation != Notation::ppsim;
    const auto after = [&](int mb, int stage) {
      const auto k = static_cast<std::size_t>(topo_.position(topo_.route_of(mb), stage));
      return mb > stop_j || (mb == stop_j && k >= stop_k);
    };
    std::size_t needed = 0;
    for (int j = stop_j; j < M_; ++j) needed += 3 * s_.routes[ix(s_.microbatch_route[ix(j)])].size();
    needed -= 3 * stop_k;
    // present: parts there; with_backward: pairs with a B or a W; mixed: pairs fused one way
    // and split the other
    std::size_t present = 0, with_backward = 0, mixed = 0;
    made_.for_each([&](std::size_t key, const PartTable::Entry& e) {
      const std::size_t pair = key / 3;
      const int stage = static_cast<int>(pair / ix(M_));
      const int mb = static_cast<int>(pair % ix(M_));
      if (!after(mb, stage)) return;
      ++present;
      if (key % 3 == 1) {  // B: is its W present, and made the other way?
        ++with_backward;
        const auto* we = made_.find(key + 1);
        if (we != nullptr && we->via_bw != e.via_bw) ++mixed;
      } else if (key % 3 == 2 && made_.find(key - 1) == nullptr) {
        ++with_backward;
      }
    });
    std::size_t missing = needed - present;
    if (one_backward) missing -= needed / 3 - with_backward;  // pairs lacking B and W: one each
    out_.count(missing + mixed);
  }

  // Pass 3: on one device, a task must come after the prerequisites that device itself runs.
  void check_device_order() {
    for (std::size_t d = 0; d < s_.order.size(); ++d) {
      for (std::size_t i = 0; i < s_.order[d].size(); ++i) {
        if (!cell_ok_[d][i]) continue;
        const Task& t = s_.order[d][i];
        for_each_dependency(topo_, t, [&](const Part& q) {
          const auto* e = made_.find(index_(q));
          if (e == nullptr || e->at.device != static_cast<int>(d)) return;
          const Slot p = e->at;
          if (p.index >= static_cast<int>(i)) {
            const bool self = p.index == static_cast<int>(i);
            out_.add(Slot{static_cast<int>(d), static_cast<int>(i)}, [&] {
              return self ? fmt::format("{}: needs {}, which it produces itself", text(t), part(q))
                          : fmt::format("{}: runs before its prerequisite {} (position {} on "
                                        "device {})",
                                        text(t), made_by(q, p), p.index, d);
            });
          }
        });
      }
    }
  }

  // Pass 4, sequence slices: on a stage a micro-batch's F run in slice order, its backwards (B
  // or BW) from the last slice down (their K/V gradients come from the later slices).
  void check_slices() {
    const int k = s_.slices;
    const auto sl = [&](int mb) { return fmt::format("micro-batch {}'s slice {}", mb / k, mb % k); };
    std::vector<int> forwards(ix(S_) * ix(M_ / k), 0), backwards(ix(S_) * ix(M_ / k), 0);
    for (std::size_t d = 0; d < s_.order.size(); ++d)
      for (std::size_t i = 0; i < s_.order[d].size(); ++i) {
        if (!cell_ok_[d][i]) continue;
        const Task& t = s_.order[d][i];
        const Slot at{static_cast<int>(d), static_cast<int>(i)};
        if (t.kind == Kind::FB) {
          out_.add(at, [&] {
            return fmt::format("{}: an overlapped F&B cell of sequence slices is not modelled "
                               "(give its F and backward as two cells)",
                               text(t));
          });
        }
        for_each_half(t, [&](Kind kind, int stage, int mb) {
          if (kind == Kind::W) return;
          const bool f = kind == Kind::F;
          int& seen = (f ? forwards : backwards)[ix(stage) * ix(M_ / k) + ix(mb / k)];
          const int want = f ? seen : k - 1 - seen;
          if (mb % k != want)
            out_.add(at, [&] {
              return fmt::format("{}: {} of {} on stage {} comes where {} belongs (a "
                                 "micro-batch's F run in slice order, its backwards from the "
                                 "last slice down)",
                                 text(t), f ? "the F" : "the backward", sl(mb), stage,
                                 sl(mb / k * k + want));
            });
          ++seen;
        });
      }
  }

  const Schedule& s_;
  Collector& out_;
  Topology topo_;
  int S_;
  int M_;
  PartIndex index_;
  PartTable made_;
  std::vector<std::vector<bool>> cell_ok_;
};

} // namespace

Violations validate(const Schedule& s, std::size_t describe) {
  Violations result;
  Collector out(result, describe);
  if (!check_structure(s, out)) return result;
  TaskChecks(s, out).run();
  return result;
}

std::string format_violations(const Schedule& s, const Violations& violations, std::size_t limit) {
  std::string msg = fmt::format("schedule '{}' is invalid: {} problem{}\n", s.name,
                                violations.total, violations.total == 1 ? "" : "s");
  std::vector<Slot> marks;
  std::size_t shown = 0;
  for (const Violation& v : violations) {
    if (shown == limit) break;
    ++shown;
    if (v.at.index >= 0)
      msg += fmt::format("  device {}, position {}: {}\n", v.at.device, v.at.index, v.what);
    else
      msg += fmt::format("  {}\n", v.what);
    if (v.at.index >= 0) marks.push_back(v.at);
  }
  if (violations.total > shown) msg += fmt::format("  ... and {} more\n", violations.total - shown);
  if (!s.order.empty() && s.order.size() <= 256) msg += format_grid(s, marks);
  if (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

void require_valid(const Schedule& schedule) {
  const auto v = validate(schedule);
  if (!v.empty()) throw ScheduleError(format_violations(schedule, v));
}

} // namespace ppsim
