// Small helpers shared by every writer that emits JSON by hand (streamed, no DOM).
#pragma once

#include "sim/task.hpp"

#include <string>
#include <string_view>

namespace ppsim {

/// Appends s as a JSON string literal (quotes and escapes: \" \\ \n \t, control chars as \u00XX).
void append_json_string(std::string& out, std::string_view s);

/// Shortest round-trip text of a double (fmt "{}"), "0" for -0, never "nan"/"inf" (throws
/// std::logic_error).
[[nodiscard]] std::string json_number(double x);
/// json_number, appended to out.
void append_json_number(std::string& out, double x);

/// Ticks (ns) as microseconds with up to 3 decimals, exact: 1500 ns -> "1.5", 2000000 -> "2000".
[[nodiscard]] std::string ticks_to_us_text(Ticks t);
/// ticks_to_us_text, appended to out (no allocation: for writers of millions of events).
void append_ticks_us(std::string& out, Ticks t);

/// Ticks (ns) as milliseconds with up to 6 decimals, exact: 1500000 ns -> "1.5".
[[nodiscard]] std::string ticks_to_ms_text(Ticks t);

/// Appends the decimal text of an integer.
void append_int(std::string& out, long long v);

} // namespace ppsim
