// The rules every Chrome trace ppsim writes must keep so that Perfetto and chrome://tracing read
// it without surprises. Checked on the writer's own tests and, through TempDir, on every trace
// file any test writes.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ppsim::test {

/// The rules a trace breaks, one line each (empty when it keeps them all):
/// - no `displayTimeUnit` (older Perfetto versions read it as the unit of ts);
/// - every event has an integer pid >= 1 (Perfetto's importer treats pid 0 specially), and every
///   pid with events has a process_name;
/// - the parameters and metrics are visible without otherData: a slice "run" whose args hold
///   the objects "parameters" and "metrics";
/// - the slices of one thread never overlap;
/// - every flow has one start `s` and one end `f` (bp "e") with the same id, name and cat, the
///   end not before the start, and each binds to exactly one slice of its thread: a point
///   strictly inside it, or the edge of a slice shorter than 2 ns (which has no inside point).
inline std::vector<std::string> trace_rule_violations(const nlohmann::json& trace) {
  using nlohmann::json;
  std::vector<std::string> bad;
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    return {"not a JSON object with a traceEvents array"};
  if (trace.contains("displayTimeUnit")) bad.emplace_back("displayTimeUnit is set");

  const auto ns = [](const json& v) { return std::llround(v.get<double>() * 1000.0); };
  struct Slice {
    std::int64_t begin, end;
  };
  using Thread = std::pair<int, int>;
  std::map<Thread, std::vector<Slice>> slices;
  std::map<int, bool> named;  // pid -> has a process_name
  std::map<std::uint64_t, json> starts, ends;
  bool summary = false;
  for (const json& e : trace["traceEvents"]) {
    if (!e.contains("pid") || !e["pid"].is_number_integer() || e["pid"].get<int>() < 1) {
      bad.push_back("an event without an integer pid >= 1: " + e.dump().substr(0, 120));
      continue;
    }
    const int pid = e["pid"].get<int>();
    const std::string ph = e.value("ph", "");
    named.try_emplace(pid, false);
    if (ph == "M") {
      if (e.value("name", "") == "process_name") named[pid] = true;
    } else if (ph == "X") {
      const std::int64_t b = ns(e.at("ts"));
      const std::int64_t d = ns(e.at("dur"));
      if (d < 0) bad.push_back("a slice with a negative duration: " + e.dump().substr(0, 120));
      slices[{pid, e.value("tid", 0)}].push_back({b, b + d});
      if (e.value("name", "") == "run" && e.contains("args") &&
          e["args"].contains("parameters") && e["args"]["parameters"].is_object() &&
          e["args"].contains("metrics") && e["args"]["metrics"].is_object())
        summary = true;
    } else if (ph == "s" || ph == "f") {
      auto& by_id = ph == "s" ? starts : ends;
      if (!by_id.emplace(e.at("id").get<std::uint64_t>(), e).second)
        bad.push_back("two flow " + ph + " events with id " + e.at("id").dump());
    }
  }
  for (const auto& [pid, has_name] : named)
    if (!has_name) bad.push_back("pid " + std::to_string(pid) + " has no process_name");
  if (!summary) bad.emplace_back("no slice \"run\" with the parameters and metrics in its args");

  for (auto& [thread, list] : slices) {
    std::sort(list.begin(), list.end(),
              [](const Slice& a, const Slice& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
    for (std::size_t i = 1; i < list.size(); ++i)
      if (list[i].begin < list[i - 1].end)
        bad.push_back("overlapping slices on pid " + std::to_string(thread.first) + " tid " +
                      std::to_string(thread.second) + " at ts " +
                      std::to_string(list[i].begin) + " ns");
  }
  // The one slice a flow event binds to, or a description of why there is none.
  const auto binds = [&](const json& e) -> std::string {
    const auto it = slices.find({e.at("pid").get<int>(), e.value("tid", 0)});
    if (it == slices.end()) return "no slice on its thread";
    const std::int64_t t = ns(e.at("ts"));
    // The slices of a thread are sorted and disjoint, so those that touch t are contiguous.
    const auto& list = it->second;
    const auto lo = std::lower_bound(list.begin(), list.end(), t,
                                     [](const Slice& s, std::int64_t x) { return s.end < x; });
    const auto hi = std::upper_bound(lo, list.end(), t,
                                     [](std::int64_t x, const Slice& s) { return x < s.begin; });
    int inside = 0, touching = 0, short_touching = 0;
    for (auto sit = lo; sit != hi; ++sit) {
      const Slice& s = *sit;
      if (s.begin < t && t < s.end) ++inside;
      else if (s.begin == t || s.end == t) {
        ++touching;
        if (s.end - s.begin < 2) ++short_touching;
      }
    }
    if (inside == 1 && touching == 0) return {};
    if (inside == 0 && short_touching >= 1) return {};
    return "binds to " + std::to_string(inside) + " slices inside and " +
           std::to_string(touching) + " at an edge";
  };
  for (const auto& [id, s] : starts) {
    const std::string where = "flow " + std::to_string(id) + " (" + s.value("name", "") + ")";
    const auto f = ends.find(id);
    if (f == ends.end()) {
      bad.push_back(where + " has no end");
      continue;
    }
    if (f->second.value("bp", "") != "e") bad.push_back(where + ": its end has no bp \"e\"");
    if (f->second.value("name", "") != s.value("name", "") || f->second.value("cat", "") != s.value("cat", ""))
      bad.push_back(where + ": start and end differ in name or cat");
    if (ns(f->second.at("ts")) < ns(s.at("ts"))) bad.push_back(where + " ends before it starts");
    if (const std::string why = binds(s); !why.empty()) bad.push_back(where + ": its start " + why);
    if (const std::string why = binds(f->second); !why.empty()) bad.push_back(where + ": its end " + why);
  }
  for (const auto& [id, f] : ends)
    if (starts.count(id) == 0) bad.push_back("flow " + std::to_string(id) + " has no start");
  return bad;
}

} // namespace ppsim::test
