// The generators, one file per family, and the precondition checks the registry's entries use.
// Private to schedules/: everything else builds schedules through make_schedule().
#pragma once

#include "ppsim/schedules/registry.hpp"

#include <string_view>

namespace ppsim {

[[nodiscard]] Schedule make_gpipe(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_1f1b(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_seq1f1b(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_seq_zb_h1(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_interleaved_seq1f1b(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_h1(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_h2(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_auto(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_1p(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_2p(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zb_v(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_v_half(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_v_min(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_interleaved_1f1b(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_looped_bfs(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_dualpipe(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_dualpipe_v(const ScheduleSpec& spec);
// PyTorch's fixed orders (ppsim/schedules/pytorch/orders.cpp), and the same with PyTorch's idle slots.
[[nodiscard]] Schedule make_interleaved_zb(const ScheduleSpec& spec);
[[nodiscard]] Schedule make_zbv_pytorch(const ScheduleSpec& spec);
[[nodiscard]] std::vector<PaddedRow> interleaved_zb_slots(const ScheduleSpec& spec);
[[nodiscard]] std::vector<PaddedRow> zbv_pytorch_slots(const ScheduleSpec& spec);

/// Throws ConfigError `NAME: needs devices >= 1 (got devices=0)` style messages.
void require_shape(std::string_view name, const ScheduleSpec& spec);
/// require_shape, and one stage per device: `NAME: supports chunks=1 only (got chunks=2)`.
void require_single_chunk_shape(std::string_view name, const ScheduleSpec& spec);

/// The memory limit zb-v generates under: --mem-limit, else ZB-H1's peak on the same costs.
[[nodiscard]] double zb_v_memory_limit(const ScheduleSpec& spec);
/// The memory limits zb-auto (--mem-limit, else ZB-H1's peak on the same costs), zb-1p (p M_B)
/// and zb-2p (2p M_B) generate under; M_B is what one micro-batch leaves on a device.
[[nodiscard]] double zb_auto_memory_limit(const ScheduleSpec& spec);
[[nodiscard]] double zb_1p_memory_limit(const ScheduleSpec& spec);
[[nodiscard]] double zb_2p_memory_limit(const ScheduleSpec& spec);

/// require_shape, 1 <= v <= 64 and devices x v x microbatches within the limits.
void check_chunk_count(std::string_view name, const ScheduleSpec& spec, int v);

// Shape checks: each throws ConfigError naming the values (`NAME: needs ... (got ...)`).
void check_zb_h2(std::string_view name, const ScheduleSpec& spec);         // m >= 2p
void check_seq1f1b(std::string_view name, const ScheduleSpec& spec);  // 1 <= slices <= 64
void check_slice_count(std::string_view name, const ScheduleSpec& spec);  // the same, any chunks
void check_zb_auto(std::string_view name, const ScheduleSpec& spec);       // chunks <= 64
void check_interleaved(std::string_view name, const ScheduleSpec& spec);   // v chunks, m % p
void check_interleaved_seq1f1b(std::string_view name, const ScheduleSpec& spec);  // m s % p
void check_looped_bfs(std::string_view name, const ScheduleSpec& spec);
void check_v_shape(std::string_view name, const ScheduleSpec& spec);  // chunks 2
void check_dualpipe(std::string_view name, const ScheduleSpec& spec);
void check_dualpipe_v(std::string_view name, const ScheduleSpec& spec);
void check_interleaved_zb(std::string_view name, const ScheduleSpec& spec);  // PyTorch's rounds
void check_zbv_pytorch(std::string_view name, const ScheduleSpec& spec);     // chunks 2

} // namespace ppsim
