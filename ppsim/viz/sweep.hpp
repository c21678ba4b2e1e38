// The writers of `ppsim sweep`'s points (ppsim/run/sweep.hpp): text table, CSV, JSON, the HTML page
// and the SVG picture of the bubble-vs-m and bubble-vs-memory curves.
#pragma once

#include "ppsim/run/sweep.hpp"
#include "ppsim/viz/svg.hpp"

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

/// One line per point; the reason of a failed point is its last column (an infeasible one's
/// with the least limit that works).
void write_sweep_table(std::ostream& out, std::span<const SweepPoint> points);

/// RFC 4180 CSV with a header line:
/// `schedule,p,m,v,mem_limit,status,chunks,tasks,makespan_ms,cost_ms,ideal_ms,bubble_rate,`
/// `bubble_over_ideal,peak_memory,reason,least_mem_limit` (metrics empty for a point that did not
/// run; least_mem_limit, in M_B, only for an infeasible one).
void write_sweep_csv(std::ostream& out, std::span<const SweepPoint> points);

/// `{"schema": "ppsim.sweep/1", "points": [...]}`.
[[nodiscard]] std::string sweep_json(std::span<const SweepPoint> points);

/// The sweep's two figures as small multiples, a panel per schedule (LineChart::group names the
/// figure, `title` the schedule; the panels of a figure share its scales and one style per
/// series name): bubble rate against m (a curve per p, v and memory limit) and bubble rate
/// against peak memory (a curve per p, v and m through its memory limits; the shapes with one
/// point are one scatter per p and v). Curves whose points coincide are one, named for all
/// ("p=4 mem=1p = p=4 mem=2p"). Panels and series in the order the points first name them.
[[nodiscard]] std::vector<LineChart> sweep_charts(std::span<const SweepPoint> points);

/// `{"schema": "ppsim.sweep-report/2", "costs", "charts": [{"group", "title", "x_label",
/// "y_label", "log_x", "x_from_zero", "series": [{"name", "colour", "dash", "joined",
/// "points": [[x, y, tip]]}]}]}`: what the sweep page's script draws. Safe inside <script>.
[[nodiscard]] std::string sweep_data_json(std::span<const SweepPoint> points,
                                          std::string_view costs);

/// A self-contained HTML page: the two charts (drawn by the script, a legend whose entries
/// toggle their series) and the table of all points including those that did not run
/// (sortable). `costs` names where the costs came from.
void write_sweep_html(std::ostream& out, std::span<const SweepPoint> points,
                      const std::string& costs);

/// `sweep --svg`: the two charts as one standalone picture.
void write_sweep_svg(std::ostream& out, std::span<const SweepPoint> points);

} // namespace ppsim
