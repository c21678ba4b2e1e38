// Static checks of schedules.
#include "sim/validate.hpp"

#include "sim/dependencies.hpp"
#include "sim/errors.hpp"

#include <fmt/format.h>
#include <optional>

namespace ppsim {

namespace {

std::size_t ix(int i) { return static_cast<std::size_t>(i); }

std::string part_name(const Part& q, Notation n) {
  return to_string(Task::make(q.kind, q.stage, q.microbatch), n);
}

// Structure: devices, placement, routes. Returns false when tasks cannot be checked further.
bool check_structure(const Schedule& s, std::vector<Violation>& out) {
  const auto add = [&](std::string what) { out.push_back(Violation{Slot{0, -1}, std::move(what)}); };
  if (s.devices <= 0) add(fmt::format("needs at least one device (got devices={})", s.devices));
  if (s.microbatches <= 0)
    add(fmt::format("needs at least one micro-batch (got microbatches={})", s.microbatches));
  if (static_cast<int>(s.order.size()) != s.devices)
    add(fmt::format("has {} device task lists for devices={}", s.order.size(), s.devices));
  if (s.stage_device.empty()) add("has no stages");
  for (std::size_t st = 0; st < s.stage_device.size(); ++st)
    if (s.stage_device[st] < 0 || s.stage_device[st] >= s.devices)
      add(fmt::format("placement: stage {} on device {}, outside 0..{}", st, s.stage_device[st],
                      s.devices - 1));
  if (s.routes.empty()) add("has no routes");
  for (std::size_t r = 0; r < s.routes.size(); ++r) {
    std::vector<bool> seen(s.stage_device.size(), false);
    if (s.routes[r].empty()) add(fmt::format("route {} is empty", r));
    for (int st : s.routes[r]) {
      if (st < 0 || st >= s.stages()) {
        add(fmt::format("route {} names stage {}, outside 0..{}", r, st, s.stages() - 1));
      } else if (seen[ix(st)]) {
        add(fmt::format("route {} passes stage {} twice", r, st));
      } else {
        seen[ix(st)] = true;
      }
    }
  }
  if (static_cast<int>(s.microbatch_route.size()) != s.microbatches)
    add(fmt::format("has {} micro-batch routes for microbatches={}", s.microbatch_route.size(),
                    s.microbatches));
  for (std::size_t j = 0; j < s.microbatch_route.size(); ++j)
    if (s.microbatch_route[j] < 0 || s.microbatch_route[j] >= static_cast<int>(s.routes.size()))
      add(fmt::format("micro-batch {} on route {}, which does not exist", j, s.microbatch_route[j]));
  return out.empty();
}

} // namespace

std::vector<Violation> validate(const Schedule& s) {
  std::vector<Violation> out;
  if (!check_structure(s, out)) return out;
  // Tasks in the vocabulary of the schedule's file.
  const auto text = [&](const Task& t) { return to_string(t, s.notation); };
  const auto part = [&](const Part& q) { return part_name(q, s.notation); };
  // A part named by the task that makes it: in PyTorch's vocabulary one full backward `0B0`
  // makes both of ppsim's parts 0B0 and 0W0, so the file's name for either is its cell.
  const auto made_by = [&](const Part& q, const Slot& at) {
    return s.notation == Notation::ppsim ? part(q) : text(s.order[ix(at.device)][ix(at.index)]);
  };
  const Topology topo(s);
  const int S = s.stages();
  const PartIndex index(S, s.microbatches);
  const std::size_t n_parts = index.size();
  std::vector<Slot> made_at(n_parts, Slot{-1, -1});
  std::vector<std::uint8_t> via_bw(n_parts, 0);

  // Pass 1, the only pass over every task of a valid schedule: cells that are wrong on their
  // own; record where each part is produced; and the cells that may run before a prerequisite
  // on their own device (one not yet produced at an earlier position there), for pass 3.
  std::vector<Slot> check_order;
  std::size_t produced = 0;
  for (std::size_t d = 0; d < s.order.size(); ++d) {
    for (std::size_t i = 0; i < s.order[d].size(); ++i) {
      const Task& t = s.order[d][i];
      const Slot at{static_cast<int>(d), static_cast<int>(i)};
      const auto add = [&](std::string what) { out.push_back(Violation{at, std::move(what)}); };
      bool ok = true;
      const auto check_half = [&](int stage, int mb) __attribute__((always_inline)) {
        if (stage < 0 || stage >= S) {
          add(fmt::format("{}: stage {} outside 0..{}", text(t), stage, S - 1));
          ok = false;
        } else if (mb < 0 || mb >= s.microbatches) {
          add(fmt::format("{}: micro-batch {} outside 0..{}", text(t), mb, s.microbatches - 1));
          ok = false;
        } else if (!topo.on_route(mb, stage)) {
          add(fmt::format("{}: stage {} is not on the route of micro-batch {}", text(t), stage,
                          mb));
          ok = false;
        } else if (s.stage_device[ix(stage)] != static_cast<int>(d)) {
          add(fmt::format("{}: stage {} is placed on device {}, not on device {}", text(t),
                          stage, s.stage_device[ix(stage)], d));
          ok = false;
        }
      };
      if (t.kind == Kind::FB) {
        check_half(t.stage, t.microbatch);
        if (t.kind2 != Kind::B && t.kind2 != Kind::BW) {
          add(fmt::format("{}: the second half of an FB must be B or BW", text(t)));
          ok = false;
        } else {
          check_half(t.stage2, t.microbatch2);
        }
      } else {
        check_half(t.stage, t.microbatch);
      }
      if (!ok) continue;
      const bool is_bw = t.kind == Kind::BW || (t.kind == Kind::FB && t.kind2 == Kind::BW);
      std::optional<Slot> reported;  // the task this one duplicates, once per task named by cell
      for_each_product(t, [&](const Part& q) __attribute__((always_inline)) {
        const auto qi = index(q);
        if (made_at[qi].index >= 0) {
          const Slot first = made_at[qi];
          if (s.notation != Notation::ppsim && reported == first) return;
          reported = first;
          add(fmt::format("{}: duplicate of {} (already at device {}, position {})", text(t),
                          made_by(q, first), first.device, first.index));
          return;
        }
        made_at[qi] = at;
        via_bw[qi] = (is_bw && q.kind != Kind::F) ? 1 : 0;
        ++produced;
      });
      // A prerequisite on a stage of this device is produced here (an OK cell records its parts
      // on the device of its stage), so it must be recorded already, at an earlier position.
      bool in_order = true;
      for_each_dependency(topo, t, [&](const Part& q) {
        if (s.stage_device[ix(q.stage)] != static_cast<int>(d)) return;
        const Slot p = made_at[index(q)];
        in_order = in_order && p.index >= 0 && p.index < static_cast<int>(i);
      });
      if (!in_order) check_order.push_back(at);
    }
  }

  // Pass 2: every (stage, micro-batch) on its route needs F, B and W exactly once, with B and W
  // either both from one BW or both separate. Without a problem so far and with as many parts as
  // the routes need, none is missing (every recorded part is on its route) and none is mixed (a
  // BW next to its own B or W duplicates a part): the pass would find nothing.
  std::size_t needed = 0;
  for (int j = 0; j < s.microbatches; ++j)
    needed += 3 * s.routes[ix(s.microbatch_route[ix(j)])].size();
  for (int j = 0; j < s.microbatches && !(out.empty() && produced == needed); ++j) {
    const auto& route = s.routes[ix(s.microbatch_route[ix(j)])];
    for (int st : route) {
      const Part f{Kind::F, st, j}, b{Kind::B, st, j}, w{Kind::W, st, j};
      const Slot home{s.stage_device[ix(st)], -1};
      const auto missing = [&](const Part& q) { return made_at[index(q)].index < 0; };
      // NOTE: in PyTorch's vocabulary a backward is one action (its B) or two (I and W); a
      // file that lacks both is told the one it most likely lost.
      const bool whole_backward = s.notation != Notation::ppsim && missing(b) && missing(w);
      for (const Part& q : {f, b, w}) {
        if (!missing(q) || (whole_backward && q.kind == Kind::W)) continue;
        const std::string what =
            whole_backward && q.kind == Kind::B
                ? fmt::format("{} (or {} and {})", text(Task::make(Kind::BW, st, j)), part(b),
                              part(w))
                : part(q);
        out.push_back(Violation{home, fmt::format("missing {} (device {})", what, home.device)});
      }
      const auto bi = index(b), wi = index(w);
      if (made_at[bi].index >= 0 && made_at[wi].index >= 0 && via_bw[bi] != via_bw[wi]) {
        const Slot at = via_bw[bi] ? made_at[wi] : made_at[bi];
        out.push_back(Violation{
            at, fmt::format("{} is fused, but {} is also scheduled on its own",
                            text(Task::make(Kind::BW, st, j)),
                            via_bw[bi] ? part(w) : part(b))});
      }
    }
  }

  // Pass 3: on one device, a task must come after the prerequisites that device itself runs
  // (the cells pass 1 could not clear, in device order).
  for (const Slot& at : check_order) {
    const Task& t = s.order[ix(at.device)][ix(at.index)];
    for_each_dependency(topo, t, [&](const Part& q) {
      const Slot p = made_at[index(q)];
      if (p.index < 0 || p.device != at.device) return;
      if (p.index >= at.index) {
        const bool self = p.index == at.index;
        out.push_back(Violation{
            at, self ? fmt::format("{}: needs {}, which it produces itself", text(t), part(q))
                     : fmt::format("{}: runs before its prerequisite {} (position {} on device {})",
                                   text(t), made_by(q, p), p.index, at.device)});
      }
    });
  }
  return out;
}

std::string format_violations(const Schedule& s, const std::vector<Violation>& violations,
                              std::size_t limit) {
  std::string msg = fmt::format("schedule '{}' is invalid: {} problem{}\n", s.name,
                                violations.size(), violations.size() == 1 ? "" : "s");
  std::vector<Slot> marks;
  for (std::size_t k = 0; k < violations.size(); ++k) {
    const auto& v = violations[k];
    if (k < limit) {
      if (v.at.index >= 0)
        msg += fmt::format("  device {}, position {}: {}\n", v.at.device, v.at.index, v.what);
      else
        msg += fmt::format("  {}\n", v.what);
    }
    if (v.at.index >= 0 && marks.size() < limit) marks.push_back(v.at);
  }
  if (violations.size() > limit) msg += fmt::format("  ... and {} more\n", violations.size() - limit);
  if (!s.order.empty() && s.order.size() <= 256) msg += format_grid(s, marks);
  if (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

void require_valid(const Schedule& schedule) {
  const auto v = validate(schedule);
  if (!v.empty()) throw ScheduleError(format_violations(schedule, v));
}

} // namespace ppsim
