// The table of schedules.
#include "ppsim/schedules/registry.hpp"

#include "ppsim/schedules/detail/generators.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <array>
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace ppsim {

std::span<const ScheduleInfo> schedule_registry() {
  // NOTE: std::to_array deduces the size, so adding a row needs no count kept in step.
  static const auto table = std::to_array<ScheduleInfo>({
      {"gpipe", {}, "m >= 1", "all forwards, then all fused backwards (BW)",
       "Huang et al., GPipe, NeurIPS 2019", &require_single_chunk_shape, &make_gpipe, nullptr,
       "ScheduleGPipe"},
      {"1f1b", {"1F1B"}, "m >= 1 (warm-up clamped to m)",
       "warm-up p-1-d F, then one F one BW, then cool-down (PipeDream-flush)",
       "Narayanan et al., PipeDream-2BW / Megatron-LM 2021", &require_single_chunk_shape, &make_1f1b, nullptr,
       "Schedule1F1B", "the order its runtime executes; PyTorch needs m >= p"},
      {"seq1f1b", {}, "m >= 1; --slices N (1..64)",
       "1F1B over sequence slices: a micro-batch's F slice by slice, its fused backwards from the "
       "last slice down (long context)",
       "Sun et al., Seq1F1B, NAACL 2025", &check_seq1f1b, &make_seq1f1b, nullptr},
      {"seq-zb-h1", {}, "m >= 1; --slices N (1..64)",
       "ZB-H1 over sequence slices: seq1f1b's order with B and W split, device d's W deferred "
       "by d backwards; with one slice ZB-H1",
       "Sun et al., Seq1F1B, NAACL 2025, with Qi et al.'s ZB-H1 (ppsim's combination)",
       &check_seq1f1b, &make_seq_zb_h1, nullptr},
      {"interleaved-seq1f1b", {"seq1f1b-i"}, "for v >= 2: p % s == 0 and m s % p == 0 (v = chunks, default 2; s = --slices)",
       "Megatron's interleaved 1F1B over sequence slices: v chunks per device in a loop, each "
       "micro-batch's backwards from its last slice down; with v = 1 seq1f1b",
       "Sun et al., Seq1F1B, NAACL 2025 (its interleaved schedule)", &check_interleaved_seq1f1b,
       &make_interleaved_seq1f1b, nullptr},
      {"interleaved-1f1b", {"1f1b-i"}, "m % p == 0 for v >= 2 (v = chunks, default 2)",
       "Megatron's virtual pipeline: v chunks per device in a loop, 1F1B over them",
       "Narayanan et al., Efficient Large-Scale Language Model Training, SC 2021",
       &check_interleaved, &make_interleaved_1f1b, nullptr, "ScheduleInterleaved1F1B",
       "PyTorch also runs m % p != 0, in max(1, m/p) rounds of m/rounds micro-batches"},
      {"looped-bfs", {}, "m % p == 0 (v = chunks, default 2)",
       "breadth-first looped: all micro-batches through each chunk in turn, BW in reverse",
       "Lamy-Poirier, Breadth-First Pipeline Parallelism, MLSys 2023", &check_looped_bfs, &make_looped_bfs, nullptr,
       "ScheduleLoopedBFS",
       "a stage's backwards go 0..m-1, PyTorch's m-1..0: the same timeline, ids mirrored; "
       "PyTorch also runs m % p != 0"},
      {"zb-h1", {"zbh1"}, "m >= 1",
       "1F1B with B and W split and W deferred to fill the cool-down; memory as 1F1B",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3", &require_single_chunk_shape, &make_zb_h1, nullptr,
       "ScheduleInterleavedZeroBubble",
       "with one stage per rank, v = 1; PyTorch needs m % max(1, m/p) == 0"},
      {"zb-h2", {"zbh2"}, "m >= 2p",
       "2(p-1-d) extra warm-up F and deferred W: zero bubble at (2p-1) M_B",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3", &check_zb_h2, &make_zb_h2},
      {"zb-auto", {},
       "memory limit >= one micro-batch's M_B per device (default: ZB-H1's peak); chunks 1-64",
       "automatic zero-bubble schedule under --mem-limit (with -v: on the loop placement): the "
       "authors' heuristic at every limit up to it, searched further",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3.1", &check_zb_auto,
       &make_zb_auto, &zb_auto_memory_limit},
      {"zb-1p", {"zb1p"}, "m >= 1",
       "zb-auto with the memory limit of 1F1B, p M_B (--mem-limit does not apply)",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3.1", &require_single_chunk_shape, &make_zb_1p,
       &zb_1p_memory_limit},
      {"zb-2p", {"zb2p"}, "m >= 1",
       "zb-auto with twice 1F1B's memory limit, 2p M_B (--mem-limit does not apply)",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 3.1", &require_single_chunk_shape, &make_zb_2p,
       &zb_2p_memory_limit},
      {"zb-v", {"zbv"},
       "m >= 1 (full pattern from m >= 2p-1); chunks 2; memory limit >= one micro-batch's "
       "(default ZB-H1's peak)",
       "V-shape, 2 chunks: the authors' ZB-V greedy searched further under --mem-limit; zero "
       "bubble when F = B = W",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024, sec. 6", &check_v_shape, &make_zb_v,
       &zb_v_memory_limit, "", "PyTorch's ScheduleZBVZeroBubble is a fixed order: zbv-pytorch"},
      {"v-half", {"vhalf"}, "m >= 1; chunks 2",
       "V-shape building block at about half of 1F1B's activation memory (or a better V order "
       "at the same memory)",
       "Qi et al., Pipeline Parallelism with Controllable Memory, NeurIPS 2024", &check_v_shape, &make_v_half},
      {"v-min", {"vmin"}, "m >= 1; chunks 2",
       "V-shape building block at about a third of 1F1B's activation memory (or a better V order "
       "at the same memory)",
       "Qi et al., Pipeline Parallelism with Controllable Memory, NeurIPS 2024", &check_v_shape, &make_v_min},
      {"dualpipe", {}, "p even, m even, m >= 2p",
       "two replicas fed from both ends, overlapped F&B pairs, split W in the cool-down",
       "DeepSeek-AI, DeepSeek-V3 Technical Report 2024, sec. 3.2.1; deepseek-ai/DualPipe",
       &check_dualpipe, &make_dualpipe},
      {"dualpipe-v", {"dualpipev"}, "m >= 2p",
       "DualPipe cut in half: one replica on a V of 2 chunks per device, overlapped F&B",
       "Sea AI Lab, cut-in-half DualPipe 2025; deepseek-ai/DualPipe (DualPipeV)",
       &check_dualpipe_v, &make_dualpipe_v, nullptr, "ScheduleDualPipeV"},
      {"interleaved-zb", {}, "m % max(1, m/p) == 0, PyTorch's rounds (v = chunks, default 2)",
       "PyTorch's ZB1P on v looped chunks: 1F1B with split backwards, W deferred d steps on "
       "device d",
       "PyTorch torch.distributed.pipelining, after Qi et al., Zero Bubble Pipeline "
       "Parallelism, ICLR 2024", &check_interleaved_zb, &make_interleaved_zb, nullptr,
       "ScheduleInterleavedZeroBubble", "its order and its idle slots", &interleaved_zb_slots},
      {"zbv-pytorch", {}, "m >= 1 (micro-batches >= m of the 2p-1 pattern dropped); chunks 2",
       "PyTorch's fixed ZB-V construction: V placement, 2 chunks, each B's W soon after it",
       "PyTorch torch.distributed.pipelining, after Qi et al., Zero Bubble Pipeline "
       "Parallelism, ICLR 2024, sec. 6", &check_zbv_pytorch, &make_zbv_pytorch, nullptr,
       "ScheduleZBVZeroBubble", "its order and its idle slots", &zbv_pytorch_slots},
  });
  return table;
}

bool takes_mem_limit(const ScheduleInfo& info) {
  return info.name == "zb-auto" || info.name == "zb-v";
}

const ScheduleInfo* find_schedule(std::string_view name) {
  // Names are lower case; `ZB-H1` is `zb-h1` (as `1F1B` always was `1f1b`).
  const auto same = [&](std::string_view n) {
    return n.size() == name.size() &&
           std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  };
  for (const auto& info : schedule_registry()) {
    if (same(info.name)) return &info;
    for (auto alias : info.aliases)
      if (same(alias)) return &info;
  }
  return nullptr;
}

std::string schedule_names() {
  std::string out;
  for (const auto& info : schedule_registry()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

void require_shape(std::string_view name, const ScheduleSpec& spec) {
  if (spec.devices < 1)
    throw ConfigError(fmt::format("{}: needs devices >= 1 (got devices={})", name, spec.devices));
  if (spec.microbatches < 1)
    throw ConfigError(
        fmt::format("{}: needs microbatches >= 1 (got microbatches={})", name, spec.microbatches));
  if (spec.devices > limits::kMaxDevices || spec.microbatches > limits::kMaxMicrobatches ||
      static_cast<long long>(spec.devices) * spec.microbatches > limits::kMaxStageMicrobatches)
    throw ConfigError(fmt::format("{}: devices={} x microbatches={} is too large to simulate", name,
                                  spec.devices, spec.microbatches));
}

void require_single_chunk_shape(std::string_view name, const ScheduleSpec& spec) {
  require_shape(name, spec);
  if (spec.chunks > 1)
    throw ConfigError(fmt::format("{}: supports chunks=1 only (got chunks={})", name, spec.chunks));
}

std::string rejection(const ScheduleInfo& info, const ScheduleSpec& spec) {
  try {
    info.check(info.name, spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

bool takes_slices(const ScheduleInfo& info) {
  return info.make == &make_seq1f1b || info.make == &make_seq_zb_h1 ||
         info.make == &make_interleaved_seq1f1b;
}

int built_chunks(const ScheduleInfo& info, const ScheduleSpec& spec) {
  if (spec.chunks > 0) return spec.chunks;
  for (const auto make : {&make_interleaved_seq1f1b, &make_interleaved_1f1b, &make_looped_bfs,
                          &make_zb_v, &make_v_half, &make_v_min, &make_dualpipe_v,
                          &make_interleaved_zb, &make_zbv_pytorch})
    if (info.make == make) return 2;
  return 1;
}

Schedule make_schedule(std::string_view name, const ScheduleSpec& spec) {
  const ScheduleInfo* info = find_schedule(name);
  if (info == nullptr)
    throw ConfigError(
        fmt::format("unknown schedule '{}' (valid: {})", name, schedule_names()));
  if (spec.slices != 1 && !takes_slices(*info))
    throw ConfigError(fmt::format("{}: sequence slices (--slices {}) are for seq1f1b, "
                                  "seq-zb-h1 and interleaved-seq1f1b only",
                                  info->name, spec.slices));
  return info->make(spec);
}

} // namespace ppsim
