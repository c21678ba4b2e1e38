// Small parsers shared by the command-line texts (--costs, --calibrate) and the file readers.
#pragma once

#include "ppsim/sim/limits.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ppsim {

/// `s` without leading and trailing white space.
[[nodiscard]] std::string_view trim(std::string_view s);

/// Calls fn(field) for each `sep`-separated field of `text`, trimmed, empty fields included,
/// until fn returns false; returns whether every field was visited.
bool for_each_field(std::string_view text, char sep,
                    const std::function<bool(std::string_view field)>& fn);

/// Splits `KEY=VALUE,KEY=VALUE` (items and both sides trimmed; one trailing comma allowed) and
/// calls fn(key, value) for each item in order. ConfigError `where: ...` for an empty item, an
/// item without `=`, a key given twice, or no item at all.
void for_each_key_value(std::string_view text, std::string_view where,
                        const std::function<void(std::string_view key, std::string_view value)>& fn);

/// A bounded quotation of input text for messages: the text itself when it has at most
/// `max_chars` characters, else its start and `... (N bytes)`. Control characters are written
/// as `\xNN`, and a cut never splits a UTF-8 sequence.
[[nodiscard]] std::string excerpt(std::string_view text,
                                  std::size_t max_chars = limits::kMaxQuoted);

/// The one number parser of ppsim: a whole finite decimal number (no trailing text);
/// ConfigError `where: expected a number, got 'x'` otherwise.
[[nodiscard]] double parse_number(std::string_view text, std::string_view where);

/// parse_number, and >= 0: `where: expected a finite number >= 0, got x`.
[[nodiscard]] double parse_non_negative(std::string_view text, std::string_view where);

/// A whole decimal integer in [lo, hi]: `where: expected an integer, got 'x'` or
/// `where: x is out of range (expected lo..hi)`.
[[nodiscard]] long long parse_integer(std::string_view text, std::string_view where,
                                      long long lo, long long hi);

/// A number followed by a unit (`2p`, `1.5GiB`, `12`): the value and the rest of the text.
/// ConfigError `where: expected a number, got 'x'` when the text does not start with one.
struct NumberWithUnit {
  double value{0};
  std::string_view unit;
};
[[nodiscard]] NumberWithUnit parse_number_with_unit(std::string_view text, std::string_view where);

/// Bytes of one unit: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (of 1024);
/// nullopt for anything else.
[[nodiscard]] std::optional<double> byte_unit(std::string_view unit);

/// A size in bytes such as `80GiB`, `512MB` or `1e9` (bytes); ConfigError `where: ...`.
[[nodiscard]] double parse_bytes(std::string_view text, std::string_view where);

} // namespace ppsim
