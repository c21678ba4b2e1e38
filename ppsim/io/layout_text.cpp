// Megatron's pipeline layout syntax: a small recursive-descent parser over a bounded expansion.
#include "ppsim/io/layout_text.hpp"
#include "ppsim/io/text_parse.hpp"

#include "ppsim/sim/errors.hpp"

#include <cctype>
#include <fmt/format.h>

namespace ppsim {

namespace {

/// The most symbols a layout may expand to (layers and stage separators).
constexpr long long kMaxExpansion = 1'000'000;
constexpr long long kMaxRepeat = 1'000'000;

class LayoutParser {
public:
  LayoutParser(std::string_view text, std::string_view where) : text_(text), where_(where) {}

  Layout parse() {
    std::string symbols;
    sequence(symbols, 0);
    if (pos_ < text_.size()) fail(pos_, "unexpected ')'");
    Layout out;
    out.stages.emplace_back();
    for (const char c : symbols) {
      StageLayers& st = out.stages.back();
      switch (c) {
      case '|': out.stages.emplace_back(); break;
      case 'E': ++st.embedding; break;
      case 't': ++st.decoders; break;
      case 'm': ++st.mtp; break;
      case 'L': ++st.loss; break;
      default: break;
      }
    }
    return out;
  }

private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw ConfigError(fmt::format("{}: position {}: {} (in '{}')", where_, at + 1, what,
                                  excerpt(text_)));
  }

  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ',' || std::isspace(static_cast<unsigned char>(text_[pos_]))))
      ++pos_;
  }

  // `*N` after an item, or 1.
  long long repeat() {
    skip_blanks();
    if (pos_ >= text_.size() || text_[pos_] != '*') return 1;
    const std::size_t star = pos_++;
    skip_blanks();
    long long n = 0;
    const std::size_t first = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      n = n * 10 + (text_[pos_] - '0');
      if (n > kMaxRepeat) fail(first, fmt::format("repetition count over {}", kMaxRepeat));
      ++pos_;
    }
    if (pos_ == first) fail(star, "'*' needs a count (t*3)");
    if (n < 1) fail(first, "repetition count must be at least 1");
    return n;
  }

  void append(std::string& out, const std::string& piece, long long times, std::size_t at) {
    if (static_cast<long long>(out.size()) + static_cast<long long>(piece.size()) * times >
        kMaxExpansion)
      fail(at, fmt::format("expands to more than {} layers and stages", kMaxExpansion));
    for (long long i = 0; i < times; ++i) out += piece;
  }

  void sequence(std::string& out, int depth) {
    if (depth > 64) fail(pos_, "groups nested more than 64 deep");
    while (true) {
      skip_blanks();
      if (pos_ >= text_.size() || text_[pos_] == ')') return;
      const std::size_t at = pos_;
      const char c = text_[pos_];
      std::string piece;
      if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        piece = std::string(1, c);
        ++pos_;
      } else if (c == '(') {
        ++pos_;
        sequence(piece, depth + 1);
        if (pos_ >= text_.size()) fail(at, "'(' without its ')'");
        ++pos_;  // ')'
      } else {
        fail(at, fmt::format("unexpected '{}' (layers are E, t, m and L; stages split by '|')", c));
      }
      append(out, piece, repeat(), at);
    }
  }

  std::string_view text_;
  std::string_view where_;
  std::size_t pos_{0};
};

} // namespace

int Layout::decoders() const {
  int n = 0;
  for (const StageLayers& s : stages) n += s.decoders;
  return n;
}

Layout parse_layout(std::string_view text, std::string_view where) {
  return LayoutParser(text, where).parse();
}

Layout layout_from_counts(std::span<const int> decoders_per_stage) {
  Layout out;
  for (const int n : decoders_per_stage) out.stages.push_back(StageLayers{0, n, 0, 0});
  if (!out.stages.empty()) {
    out.stages.front().embedding = 1;
    out.stages.back().loss = 1;
  }
  return out;
}

Layout even_layout(int layers, int stages) {
  if (stages < 1 || layers < 0 || layers % stages != 0)
    throw ConfigError(fmt::format(
        "the even split needs layers % stages == 0 (got layers={}, stages={}); give --layout or "
        "--layers-per-stage",
        layers, stages));
  const std::vector<int> counts(static_cast<std::size_t>(stages), layers / stages);
  return layout_from_counts(counts);
}

Layout default_layout(int layers, int stages) {
  if (stages >= 1 && layers >= 0 && layers % stages == 0) return even_layout(layers, stages);
  if (stages < 1 || layers < 0)
    throw ConfigError(fmt::format("no layout of layers={} over stages={}", layers, stages));
  std::vector<int> counts(static_cast<std::size_t>(stages), layers / stages);
  int extra = layers % stages;
  // Middle stages first, from the second one outwards: the ends keep the fewest layers.
  for (int i = 1; i < stages - 1 && extra > 0; ++i, --extra) ++counts[static_cast<std::size_t>(i)];
  for (int i : {0, stages - 1})
    if (extra > 0) {
      ++counts[static_cast<std::size_t>(i)];
      --extra;
    }
  return layout_from_counts(counts);
}

std::string layout_text(const Layout& layout) {
  std::string out;
  for (std::size_t i = 0; i < layout.stages.size(); ++i) {
    if (i > 0) out += '|';
    const StageLayers& s = layout.stages[i];
    out += std::string(static_cast<std::size_t>(s.embedding), 'E');
    if (s.decoders > 3) out += fmt::format("t*{}", s.decoders);
    else out += std::string(static_cast<std::size_t>(s.decoders), 't');
    out += std::string(static_cast<std::size_t>(s.mtp), 'm');
    if (s.loss > 0 && s.decoders > 3 && s.mtp == 0) out += ',';
    out += std::string(static_cast<std::size_t>(s.loss), 'L');
  }
  return out;
}

void check_layout(const Layout& layout, int stages, int layers, std::string_view where) {
  const int n = static_cast<int>(layout.stages.size());
  if (n != stages)
    throw ConfigError(fmt::format("{}: {} stages, but the schedule has {} (devices x chunks)",
                                  where, n, stages));
  if (layout.decoders() != layers)
    throw ConfigError(fmt::format("{}: {} decoder layers (t), but the model has {}", where,
                                  layout.decoders(), layers));
  int embeddings = 0, losses = 0;
  for (const StageLayers& s : layout.stages) {
    embeddings += s.embedding;
    losses += s.loss;
  }
  if (embeddings != 1 || layout.stages.front().embedding != 1)
    throw ConfigError(fmt::format("{}: needs one embedding (E), on the first stage", where));
  if (losses != 1 || layout.stages.back().loss != 1)
    throw ConfigError(fmt::format("{}: needs one loss (L), on the last stage", where));
}

} // namespace ppsim
