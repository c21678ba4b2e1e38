// Private helper of the JSON loaders (.cpp files only): typed reads that name the JSON path.
#pragma once

#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppsim::detail {

/// Where `text` nests arrays and objects deeper than limits::kMaxJsonDepth, or holds a number
/// beyond the range of a double: `line L, column C: ...`; nullopt when neither. Strings are
/// skipped; the text need not be valid JSON (the parser says what else is wrong). This runs
/// before the parser, so no deep or huge value is ever built or printed.
inline std::optional<std::string> json_bounds_problem(std::string_view text) {
  int depth = 0;
  std::size_t line = 1, line_start = 0;
  const auto at = [&](std::size_t i) {
    return fmt::format("line {}, column {}", line, i - line_start + 1);
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
        else if (text[i] == '\n') return std::nullopt;  // not JSON: the parser says where
      }
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJsonDepth)
        return fmt::format("{}: nested deeper than {} levels", at(i), limits::kMaxJsonDepth);
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t end = i;
      while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                                   text[end] == '-' || text[end] == '+' || text[end] == '.' ||
                                   text[end] == 'e' || text[end] == 'E'))
        ++end;
      const std::string token(text.substr(i, end - i));
      // strtod as the parser reads numbers: huge is infinite, tiny is zero (which is fine).
      if (!std::isfinite(std::strtod(token.c_str(), nullptr)))
        return fmt::format("{}: the number {} is out of range (at most about 1.8e308)", at(i),
                           excerpt(token));
      i = end - 1;
    }
  }
  return std::nullopt;
}

/// The line and column of the `index`-th (from 0) object key of `text` in document order: a
/// string followed by `:`, the only place JSON puts a colon outside a string.
inline std::string json_key_place(std::string_view text, std::size_t index) {
  std::size_t line = 1, line_start = 0, keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      std::size_t next = i + 1;
      while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next])) != 0)
        ++next;
      if (next < text.size() && text[next] == ':' && keys++ == index)
        return fmt::format("line {}, column {}", line, start - line_start + 1);
    }
  }
  return "at the end";
}

/// Parses a whole document; ConfigError `where: not valid JSON: ...` when it is not JSON,
/// `where: line L, column C: ...` when it nests too deeply or a number overflows, and
/// `where: line L, column C: duplicate key "k"` when an object names a key twice (the parser
/// alone would keep the last one without a word).
inline nlohmann::json parse_document(std::string_view text, std::string_view where) {
  if (const auto problem = json_bounds_problem(text))
    throw ConfigError(fmt::format("{}: {}", where, *problem));
  // The keys of each open object, innermost last; the count of keys read so far names the
  // place of a duplicate (the parser's callback knows no positions).
  std::vector<std::vector<std::string>> open;
  std::size_t keys = 0;
  std::optional<std::pair<std::string, std::size_t>> duplicate;
  const auto track = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) open.emplace_back();
    else if (event == E::object_end && !open.empty()) open.pop_back();
    else if (event == E::key && !open.empty() && !duplicate) {
      std::string key = parsed.get<std::string>();
      auto& seen = open.back();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) duplicate.emplace(key, keys);
      else seen.push_back(std::move(key));
      ++keys;
    }
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text, track);
  } catch (const nlohmann::json::exception& e) {
    // The parser's message ends with the token it last read, which may be the whole input.
    throw ConfigError(fmt::format("{}: not valid JSON: {}", where, excerpt(e.what(), 240)));
  }
  if (duplicate)
    throw ConfigError(fmt::format("{}: {}: duplicate key \"{}\" (each key once per object)",
                                  where, json_key_place(text, duplicate->second),
                                  excerpt(duplicate->first)));
  return doc;
}

/// Reads values of a parsed document; every failure is a ConfigError `where: /path: what`.
struct JsonReader {
  std::string_view where;

  /// The path and the message are bounded: keys and values come from the input.
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", where, path.empty() ? "/" : excerpt(path, 200),
                                  excerpt(what, 1000)));
  }
  /// A value as the message shows it: at most 40 characters of its JSON text, built without
  /// serialising the whole value.
  static std::string shown(const nlohmann::json& j) {
    constexpr std::size_t kShown = 40;
    std::string s;
    append_shown(j, s, kShown + 1);
    if (s.size() > kShown) {
      std::size_t keep = kShown - 3;
      while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
      s = s.substr(0, keep) + "...";
    }
    return s;
  }
  static void append_shown(const nlohmann::json& j, std::string& out, std::size_t budget) {
    if (j.is_array() || j.is_object()) {
      out += j.is_array() ? '[' : '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end() && out.size() <= budget; ++it) {
        if (!first) out += ',';
        first = false;
        if (j.is_object()) {
          append_shown(nlohmann::json(it.key().substr(0, budget)), out, budget);
          out += ':';
        }
        append_shown(*it, out, budget);
      }
      out += j.is_array() ? ']' : '}';
    } else if (j.is_string()) {
      const auto& text = j.get_ref<const std::string&>();
      out += nlohmann::json(text.substr(0, budget))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      out += j.dump();
    }
  }
  /// A number in [0, max].
  double number(const nlohmann::json& j, const std::string& path,
                double max = std::numeric_limits<double>::max()) const {
    if (!j.is_number()) fail(path, fmt::format("expected a number, got {}", shown(j)));
    const double v = j.get<double>();
    if (!std::isfinite(v) || v < 0) fail(path, fmt::format("expected a number >= 0, got {}", shown(j)));
    if (v > max) fail(path, fmt::format("{} is too large (at most {:g})", shown(j), max));
    return v;
  }
  Ticks ms(const nlohmann::json& j, const std::string& path) const {
    return ms_to_ticks(number(j, path), path);
  }
  void object(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", shown(j)));
  }
  void array(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, fmt::format("expected an array, got {}", shown(j)));
  }
  std::string string(const nlohmann::json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", shown(j)));
    return j.get<std::string>();
  }
  /// A name (of a schedule, a case, a model): a string of at most limits::kMaxNameChars bytes,
  /// since tables, traces and messages print it.
  std::string name(const nlohmann::json& j, const std::string& path) const {
    std::string s = string(j, path);
    if (s.size() > limits::kMaxNameChars)
      fail(path, fmt::format("'{}': a name has at most {} characters", excerpt(s),
                             limits::kMaxNameChars));
    return s;
  }
  /// An integer in [lo, hi]; 2.0 is not accepted as 2.
  int integer(const nlohmann::json& j, const std::string& path, int lo = 0,
              int hi = std::numeric_limits<int>::max()) const {
    if (!j.is_number_integer())
      fail(path, fmt::format("expected an integer, got {}", shown(j)));
    bool in_range = false;
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      in_range = v <= static_cast<std::uint64_t>(hi) && static_cast<std::int64_t>(v) >= lo;
    } else {
      const auto v = j.get<std::int64_t>();
      in_range = v >= lo && v <= hi;
    }
    if (!in_range) fail(path, fmt::format("expected an integer in {}..{}, got {}", lo, hi, shown(j)));
    return static_cast<int>(j.get<std::int64_t>());
  }
};

/// A JSON pointer token: `~` and `/` escaped (RFC 6901).
inline std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

/// One key of a JSON object: its name, whether it must be present (and what to say when it is
/// not), and how its value is read. The table of an object is its documentation: the reader
/// writes the "unknown key" message from the same rows it reads with.
struct Field {
  std::string_view name;
  bool required{false};
  std::string missing{"missing"};  ///< the message when a required key is absent
  std::function<void(const nlohmann::json& value, const std::string& path)> read;
};

/// Which keys of an object were present.
class FieldsSeen {
public:
  FieldsSeen(std::span<const Field> fields, std::vector<bool> seen)
      : fields_(fields), seen_(std::move(seen)) {}
  [[nodiscard]] bool has(std::string_view name) const {
    for (std::size_t i = 0; i < fields_.size(); ++i)
      if (fields_[i].name == name) return seen_[i];
    return false;
  }

private:
  std::span<const Field> fields_;
  std::vector<bool> seen_;
};

/// Reads the object `j` at `path` through `fields`, in the document's key order. A key not in
/// the table fails with `unknown key (valid: a, b, c)`; then each required key that was absent
/// fails, in table order.
inline FieldsSeen read_fields(const JsonReader& r, const nlohmann::json& j,
                                     const std::string& path, std::span<const Field> fields) {
  r.object(j, path);
  std::vector<bool> seen(fields.size(), false);
  for (const auto& [key, value] : j.items()) {
    const std::string at = path + "/" + pointer_token(key);
    std::size_t i = 0;
    while (i < fields.size() && fields[i].name != key) ++i;
    if (i == fields.size()) {
      std::string valid;
      for (const Field& f : fields) valid += (valid.empty() ? "" : ", ") + std::string(f.name);
      r.fail(at, fmt::format("unknown key (valid: {})", valid));
    }
    seen[i] = true;
    fields[i].read(value, at);
  }
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].required && !seen[i])
      r.fail(path + "/" + pointer_token(fields[i].name), fields[i].missing);
  return FieldsSeen(fields, std::move(seen));
}

/// A field whose value must be the string `schema` (`"schema": "ppsim.costs/1"`).
inline Field schema_field(const JsonReader& r, std::string_view schema) {
  return Field{"schema", true, fmt::format("missing (expected \"{}\")", schema), [&r, schema](const nlohmann::json& v, const std::string& at) {
                 if (!v.is_string() || v.get<std::string>() != schema)
                   r.fail(at, fmt::format("expected \"{}\", got {}", schema, JsonReader::shown(v)));
               }};
}

} // namespace ppsim::detail
