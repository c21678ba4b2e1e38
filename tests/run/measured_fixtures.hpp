// Synthetic measured runs for the import and diff tests: a schedule played as a machine would
// (durations with noise, a planted straggler, planted message delays), written as the traces
// PyTorch's profiler and Megatron's timers write.
#pragma once

#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/dependencies.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/timeline.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ppsim::test {

/// What a played run is made of: each run's duration (device by device, in order), the latency
/// of every message, and extra delays of single messages (producer run, consumer run).
struct PlayPlan {
  std::vector<Ticks> durations;
  Ticks comm{0};
  std::map<std::pair<int, int>, Ticks> delay;
};

/// The durations of `costs` for every task of `s`, each scaled by a factor uniform in
/// [1 - noise, 1 + noise] from a fixed seed (the same plan every time).
inline std::vector<Ticks> noisy_durations(const Schedule& s, const CostModel& costs, double noise,
                                          std::uint64_t seed = 7) {
  std::vector<Ticks> d;
  for (const auto& order : s.order)
    for (const Task& t : order) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>(seed >> 11) / static_cast<double>(1ULL << 53);
      d.push_back(static_cast<Ticks>(static_cast<double>(costs.duration(t)) * (1 + noise * (2 * u - 1))));
    }
  return d;
}

/// Plays the schedule: a task starts when its device is free and each input has arrived (its
/// producer's end, plus the latency and any extra delay when it crossed devices). An oracle of
/// its own, independent of the simulator.
inline Timeline play(const Schedule& s, const PlayPlan& plan) {
  Timeline t;
  t.devices = s.devices;
  t.device_begin.push_back(0);
  for (const auto& order : s.order) {
    for (const Task& task : order) t.runs.push_back({task, -1, -1});
    t.device_begin.push_back(static_cast<int>(t.runs.size()));
  }
  std::map<std::tuple<int, int, int>, int> producer;  // (kind, stage, mb) -> run
  for (std::size_t r = 0; r < t.runs.size(); ++r)
    for_each_product(t.runs[r].task, [&](const Part& p) {
      producer[{static_cast<int>(p.kind), p.stage, p.microbatch}] = static_cast<int>(r);
    });
  const Topology topo(s);
  std::vector<int> next(static_cast<std::size_t>(s.devices), 0);
  std::vector<Ticks> free(static_cast<std::size_t>(s.devices), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < s.devices; ++d) {
      const auto du = static_cast<std::size_t>(d);
      while (t.device_begin[du] + next[du] < t.device_begin[du + 1]) {
        const int r = t.device_begin[du] + next[du];
        Ticks ready = free[du];
        bool ok = true;
        for_each_dependency(topo, t.runs[static_cast<std::size_t>(r)].task, [&](const Part& p) {
          const int q = producer.at({static_cast<int>(p.kind), p.stage, p.microbatch});
          const TaskRun& qr = t.runs[static_cast<std::size_t>(q)];
          if (qr.end < 0) {
            ok = false;
            return;
          }
          Ticks at = qr.end;
          if (topo.device_of(qr.task.stage) != d) {
            at += plan.comm;
            if (auto it = plan.delay.find({q, r}); it != plan.delay.end()) at += it->second;
          }
          ready = std::max(ready, at);
        });
        if (!ok) break;
        TaskRun& run = t.runs[static_cast<std::size_t>(r)];
        run.start = ready;
        run.end = ready + plan.durations[static_cast<std::size_t>(r)];
        free[du] = run.end;
        ++next[du];
        progress = true;
      }
    }
  }
  return t;
}

/// Microseconds with three decimals, as Kineto writes them.
inline std::string kineto_us(Ticks ns) {
  const Ticks a = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", a / 1000, a % 1000);
}

/// One rank's Kineto trace of a played run: `PP:<action>` ranges (PyTorch's names) on the CPU
/// (user_annotation) and, with `gpu`, on two GPU streams (gpu_user_annotation, a nanosecond wider
/// on each side as Kineto draws them), among profiler noise (ops, kernels, a step range). Times
/// are shifted by `skew` (a rank's clock off).
inline std::string kineto_trace(const Timeline& t, int rank, bool gpu = false, Ticks skew = 0,
                                const std::string& prefix = "PP:") {
  std::string e;
  const long long pid = 4000 + rank;
  const auto add = [&](const std::string& ev) { e += (e.empty() ? "\n" : ",\n") + ev; };
  Ticks begin = 0, end = 0;
  for (const TaskRun& r : t.device_runs(rank)) {
    const Ticks s = r.start + skew, f = r.end + skew;
    end = std::max(end, f);
    const std::string name = prefix + to_string(r.task, Notation::pytorch);
    add(fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"External id":1}}}})",
                    name, pid, pid, kineto_us(s), kineto_us(f - s)));
    add(fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"Sequence number":3}}}})",
                    pid, pid, kineto_us(s + 1), kineto_us((f - s) / 2)));
    if (gpu) {
      add(fmt::format(R"({{"ph":"X","cat":"gpu_user_annotation","name":"{}","pid":{},"tid":7,"ts":{},"dur":{}}})",
                      name, rank, kineto_us(s - 1), kineto_us(f - s + 2)));
      add(fmt::format(R"({{"ph":"X","cat":"kernel","name":"sm90_gemm","pid":{},"tid":7,"ts":{},"dur":{},"args":{{"stream":7}}}})",
                      rank, kineto_us(s), kineto_us(f - s)));
    }
  }
  if (gpu && !t.device_runs(rank).empty()) {
    // NCCL's stream sees the first range too.
    const TaskRun& r = t.device_runs(rank).front();
    add(fmt::format(R"({{"ph":"X","cat":"gpu_user_annotation","name":"PP:{}","pid":{},"tid":20,"ts":{},"dur":{}}})",
                    to_string(r.task, Notation::pytorch), rank, kineto_us(r.end + skew), kineto_us(5000)));
  }
  add(fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":{},"tid":{},"ts":{},"dur":{}}})",
                  pid, pid, kineto_us(begin + skew), kineto_us(end - begin)));
  add(R"({"ph":"i","cat":"Trace","name":"Record Window End","pid":"","tid":"","ts":0.0,"s":"g"})");
  return fmt::format(R"({{"schemaVersion":1,"deviceProperties":[{{"id":0,"name":"NVIDIA H100"}}],)"
                     R"("distributedInfo":{{"backend":"nccl","rank":{},"world_size":{}}},)"
                     R"("baseTimeNanoseconds":1700000000000000000,"traceEvents":[{}]}})",
                     rank, t.devices, e) +
         "\n";
}

/// One rank's Megatron timer dump (Victarry's ENABLE_PP_TIMER patch) of a played 1F1B run with
/// fused backwards: `forward-{mb}-start` ... in ms since a barrier.
inline std::string megatron_dump(const Timeline& t, int rank) {
  std::string e;
  for (const TaskRun& r : t.device_runs(rank)) {
    const char* kind = r.task.kind == Kind::F ? "forward" : "backward";
    e += fmt::format("{}\"{}-{}-start\": {}, \"{}-{}-end\": {}", e.empty() ? "" : ", ", kind,
                     r.task.microbatch, ticks_to_ms_text(r.start), kind, r.task.microbatch,
                     ticks_to_ms_text(r.end));
  }
  return "{" + e + ", \"total-execution-time\": 123.5}\n";
}

/// Megatron's file name for a rank's dump.
inline std::string megatron_name(int pp, int rank) {
  return fmt::format("event_times_PP{}_VPP1_TPxCPxDP_rank_0_pp_rank_{}_rank_{}.json", pp, rank, rank);
}

} // namespace ppsim::test
