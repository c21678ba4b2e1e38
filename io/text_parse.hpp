// Small parsers shared by the command-line texts (--costs, --calibrate) and the file readers.
#pragma once

#include <functional>
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
/// item without `=`, or no item at all.
void for_each_key_value(std::string_view text, std::string_view where,
                        const std::function<void(std::string_view key, std::string_view value)>& fn);

/// A finite decimal number >= 0; ConfigError `where: expected a number, got 'x'` otherwise.
[[nodiscard]] double parse_non_negative(std::string_view text, std::string_view where);

} // namespace ppsim
