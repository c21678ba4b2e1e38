// The page of `ppsim serve`: the playground's controls around the report's drawing.
#pragma once

#include <iosfwd>
#include <string_view>

namespace ppsim {

/// The playground page: a form of controls (schedules, p, m, v, costs, a cost profile, the memory
/// limit, iterations) built by ppsim/viz/page/playground.js from `config` (JSON: {"schedules": [{"name",
/// "constraint", "description"}], "profiles": [...], "limits": {...}, "defaults": {...}}), a
/// status line, and the drawing area that report.js fills from /api/timeline. Self-contained: the
/// style and both scripts are inline.
void write_playground_page(std::ostream& out, std::string_view config);

} // namespace ppsim
