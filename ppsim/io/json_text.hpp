// Small helpers shared by every writer that emits JSON by hand (streamed, no DOM).
#pragma once

#include "ppsim/sim/time.hpp"

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

/// Appends the decimal text of an integer.
void append_int(std::string& out, long long v);

} // namespace ppsim
