// The readers of measured runs: Chrome-trace JSON (Kineto, ppsim) streamed through nlohmann's
// SAX interface over zlib, and Megatron's per-micro-batch timer dumps.
#include "ppsim/io/trace_import.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/limits.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fcntl.h>
#include <fmt/format.h>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <streambuf>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <zlib.h>

namespace ppsim {

namespace {

using nlohmann::json;

// ------------------------------------------------------------------------------------------
// Bytes in: a file (plain or gzip, through zlib, which reads both) or a text in memory, with the
// decompressed size bounded.

class InputBuf : public std::streambuf {
public:
  // A file: opened without blocking (a FIFO with no writer must not hang) and only when regular.
  InputBuf(const std::string& path, std::size_t max_bytes) : max_(max_bytes), buf_(1 << 18) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      throw ConfigError(fmt::format("{}: cannot open the trace ({})", excerpt(path),
                                    std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw ConfigError(fmt::format("{}: cannot read the trace (not a regular file)", excerpt(path)));
    }
    // Blocking again for the reads: a regular file never blocks for long.
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    gz_ = ::gzdopen(fd, "rb");
    if (gz_ == nullptr) {
      ::close(fd);
      throw ConfigError(fmt::format("{}: cannot open the trace", excerpt(path)));
    }
    ::gzbuffer(gz_, 1 << 17);
  }
  // A text in memory, read as it is.
  InputBuf(std::string_view text, std::size_t max_bytes) : max_(max_bytes) {
    char* p = const_cast<char*>(text.data());
    const std::size_t n = std::min(text.size(), max_bytes + 1);
    setg(p, p, p + n);
    total_ = n;
    over_ = text.size() > max_bytes;
  }
  ~InputBuf() override {
    if (gz_ != nullptr) ::gzclose(gz_);
  }
  InputBuf(const InputBuf&) = delete;
  InputBuf& operator=(const InputBuf&) = delete;

  [[nodiscard]] bool over_limit() const { return over_; }
  [[nodiscard]] bool read_error() const { return failed_; }
  [[nodiscard]] std::size_t bytes() const { return total_; }

protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (gz_ == nullptr || over_ || failed_) return traits_type::eof();
    const int n = ::gzread(gz_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      failed_ = true;
      return traits_type::eof();
    }
    if (n == 0) return traits_type::eof();
    total_ += static_cast<std::size_t>(n);
    if (total_ > max_) {
      over_ = true;
      return traits_type::eof();
    }
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

private:
  gzFile gz_{nullptr};
  std::size_t max_;
  std::vector<char> buf_;
  std::size_t total_{0};
  bool over_{false};
  bool failed_{false};
};

// The first bytes of a source, for format detection.
std::string head_of(InputBuf& in, std::size_t n) {
  std::string head;
  head.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = in.sbumpc();
    if (c == std::streambuf::traits_type::eof()) break;
    head += static_cast<char>(c);
  }
  return head;
}

// ------------------------------------------------------------------------------------------
// Numbers of a trace: microseconds with up to 3 decimals (Kineto) as exact nanoseconds.

// |ts| up to 4e15 us (epoch microseconds until 2096) and a duration up to limits::kMaxMs.
constexpr double kMaxTraceUs = 4e15;

std::optional<Ticks> us_to_ticks(double us) {
  if (!std::isfinite(us) || std::abs(us) > kMaxTraceUs) return std::nullopt;
  return static_cast<Ticks>(std::llround(us * 1000.0));
}

// "1712345678901234.567" exactly; numbers with an exponent through the double.
std::optional<Ticks> raw_us_to_ticks(const std::string& raw, double value) {
  const auto dot = raw.find('.');
  if (raw.find_first_of("eE") != std::string::npos || dot == std::string::npos)
    return us_to_ticks(value);
  if (!std::isfinite(value) || std::abs(value) > kMaxTraceUs) return std::nullopt;
  long long whole = 0;
  const bool negative = !raw.empty() && raw[0] == '-';
  const char* b = raw.data() + (negative ? 1 : 0);
  const auto [p, ec] = std::from_chars(b, raw.data() + dot, whole);
  if (ec != std::errc{} || p != raw.data() + dot) return us_to_ticks(value);
  long long frac = 0;
  int digits = 0;
  std::size_t i = dot + 1;
  for (; i < raw.size() && digits < 3; ++i, ++digits) frac = frac * 10 + (raw[i] - '0');
  for (; digits < 3; ++digits) frac *= 10;
  if (i < raw.size() && raw[i] >= '5') ++frac;  // round half up on the fourth decimal
  const Ticks t = whole * 1000 + frac;
  return negative ? -t : t;
}

// ------------------------------------------------------------------------------------------
// Event names.

// Counts of range names, for the message when nothing is recognised (bounded in names).
class NameCounts {
public:
  void add(const std::string& name) {
    auto it = counts_.find(name);
    if (it != counts_.end()) ++it->second;
    else if (counts_.size() < kMaxNames) counts_.emplace(name, 1);
  }
  [[nodiscard]] std::vector<std::pair<std::string, std::size_t>> top(std::size_t n) const {
    std::vector<std::pair<std::string, std::size_t>> v(counts_.begin(), counts_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (v.size() > n) v.resize(n);
    return v;
  }
  void merge(const NameCounts& other) {
    for (const auto& [k, c] : other.counts_) {
      auto it = counts_.find(k);
      if (it != counts_.end()) it->second += c;
      else if (counts_.size() < kMaxNames) counts_.emplace(k, c);
    }
  }

private:
  static constexpr std::size_t kMaxNames = 10'000;
  std::unordered_map<std::string, std::size_t> counts_;
};

// What a name is: an action, an optimizer range, or nothing.
struct NameMatch {
  enum class What : std::uint8_t { none, action, optimizer, comm } what{What::none};
  Task task;
  int chunk{-1};  ///< a --map's chunk: the stage is chunk * ranks + rank
  bool stage_given{true};
  /// A comm action that sends (`PP:1SEND_F3`): what, from which stage, of which micro-batch.
  std::optional<MeasuredMessage> send;
};

// Reads a run of digits at `at` into `v` (at most `hi`), moving `at` past it.
bool read_index(std::string_view s, std::size_t& at, int hi, int& v) {
  const char* b = s.data() + at;
  const auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (ec != std::errc{} || p == b || v < 0 || v > hi) return false;
  at += static_cast<std::size_t>(p - b);
  return true;
}

// PyTorch's send actions, `1SEND_F3` and `1SEND_B3` (stage, what, micro-batch).
std::optional<MeasuredMessage> pytorch_send(std::string_view body) {
  MeasuredMessage msg;
  std::size_t at = 0;
  if (!read_index(body, at, limits::kMaxDevices * 64, msg.stage)) return std::nullopt;
  const std::string_view rest = body.substr(at);
  if (rest.starts_with("SEND_F")) msg.part = Kind::F;
  else if (rest.starts_with("SEND_B")) msg.part = Kind::B;
  else return std::nullopt;
  at += 6;
  if (!read_index(body, at, limits::kMaxMicrobatches - 1, msg.microbatch) || at != body.size())
    return std::nullopt;
  return msg;
}

// A ppsim trace's message slice, `F3 -> stage 2` (`.cN` with chunks, `.sK` with slices): the
// message and its slice (-1 = none). The producer is the stage before (F) or after (B) it.
std::optional<std::pair<MeasuredMessage, int>> ppsim_message(std::string_view name) {
  MeasuredMessage msg;
  std::size_t at = 0;
  if (name.starts_with("BW")) {
    msg.part = Kind::B;
    at = 2;
  } else if (name.starts_with("F") || name.starts_with("B")) {
    msg.part = name[0] == 'F' ? Kind::F : Kind::B;
    at = 1;
  } else {
    return std::nullopt;
  }
  int chunk = 0, slice = -1, to = 0;
  if (!read_index(name, at, limits::kMaxMicrobatches - 1, msg.microbatch)) return std::nullopt;
  if (name.substr(at).starts_with(".c") && !read_index(name, at += 2, limits::kMaxDevices, chunk))
    return std::nullopt;
  if (name.substr(at).starts_with(".s") &&
      !read_index(name, at += 2, limits::kMaxSlices - 1, slice))
    return std::nullopt;
  constexpr std::string_view arrow = " -> stage ";
  if (!name.substr(at).starts_with(arrow)) return std::nullopt;
  at += arrow.size();
  if (!read_index(name, at, limits::kMaxDevices * 64, to) || at != name.size()) return std::nullopt;
  msg.stage = msg.part == Kind::F ? to - 1 : to + 1;
  if (msg.stage < 0) return std::nullopt;
  return std::pair{msg, slice};
}

// Bytes of one element of a tensor of Kineto's `dtype` (c10's ScalarType names, and the short
// ones some communication libraries write); 0 when unknown.
double dtype_bytes(std::string_view dtype) {
  static constexpr std::pair<std::string_view, double> sizes[] = {
      {"Float", 4},       {"float", 4},        {"float32", 4},       {"Double", 8},
      {"double", 8},      {"float64", 8},      {"Half", 2},          {"half", 2},
      {"float16", 2},     {"BFloat16", 2},     {"bfloat16", 2},      {"Long", 8},
      {"int64", 8},       {"Int", 4},          {"int32", 4},         {"Short", 2},
      {"int16", 2},       {"Char", 1},         {"int8", 1},          {"Byte", 1},
      {"uint8", 1},       {"Bool", 1},         {"bool", 1},          {"ComplexHalf", 4},
      {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"Float8_e4m3fnuz", 1}, {"Float8_e5m2fnuz", 1}, {"UInt16", 2},   {"UInt32", 4},
      {"UInt64", 8},
  };
  for (const auto& [name, bytes] : sizes)
    if (name == dtype) return bytes;
  return 0;
}

int group_int(const std::smatch& m, int group, int hi, bool& ok) {
  if (group == 0) return -1;
  const std::string s = m[static_cast<std::size_t>(group)].str();
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0 || v > hi) ok = false;
  return v;
}

class NameMatcher {
public:
  explicit NameMatcher(const std::vector<TraceMap>& maps) : maps_(maps) {}

  // PyTorch's range names first (`PP:0F1`, ScheduleGPipe's `Forward 3`), then the --maps.
  NameMatch match(const std::string& name) {
    if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    NameMatch m = compute(name);
    if (cache_.size() < kMaxCached) cache_.emplace(name, m);
    return m;
  }

private:
  static constexpr std::size_t kMaxCached = 100'000;

  NameMatch compute(const std::string& name) const {
    NameMatch m;
    for (const TraceMap& map : maps_) {
      std::smatch sm;
      if (!std::regex_match(name, sm, map.pattern)) continue;
      if (map.optimizer) {
        m.what = NameMatch::What::optimizer;
        return m;
      }
      bool ok = true;
      const int mb = group_int(sm, map.mb_group, limits::kMaxMicrobatches - 1, ok);
      const int stage = group_int(sm, map.stage_group, limits::kMaxDevices * 64, ok);
      const int chunk = group_int(sm, map.chunk_group, limits::kMaxDevices, ok);
      if (!ok) continue;
      m.what = NameMatch::What::action;
      m.task = Task::make(map.kind, std::max(stage, 0), mb);
      m.stage_given = map.stage_group != 0;
      m.chunk = chunk;
      return m;
    }
    if (name.starts_with("PP:")) {
      const std::string_view body = std::string_view(name).substr(3);
      Task t;
      if (!parse_pytorch_action(body, t, PytorchNotation::current)) {
        m.what = NameMatch::What::action;
        m.task = t;
        return m;
      }
      for (const char* comm : {"SEND_", "RECV_", "UNSHARD", "RESHARD", "REDUCE_GRAD"})
        if (body.find(comm) != std::string_view::npos) m.what = NameMatch::What::comm;
      if (m.what == NameMatch::What::comm) m.send = pytorch_send(body);
      return m;
    }
    // ScheduleGPipe's ranges, one stage per rank.
    for (const auto& [prefix, kind] : {std::pair{"Forward ", Kind::F}, {"Backward ", Kind::BW}}) {
      const std::string_view p(prefix);
      if (!name.starts_with(p)) continue;
      int mb = 0;
      const char* b = name.data() + p.size();
      const char* e = name.data() + name.size();
      const auto [q, ec] = std::from_chars(b, e, mb);
      if (ec == std::errc{} && q == e && b != e && mb >= 0 && mb < limits::kMaxMicrobatches) {
        m.what = NameMatch::What::action;
        m.task = Task::make(kind, 0, mb);
        m.stage_given = false;
      }
      return m;
    }
    if (name.starts_with("Optimizer.step") || name.starts_with("optimizer.step") ||
        name == "optimizer_step")
      m.what = NameMatch::What::optimizer;
    return m;
  }

  const std::vector<TraceMap>& maps_;
  std::unordered_map<std::string, NameMatch> cache_;
};

// ------------------------------------------------------------------------------------------
// One Chrome-trace file.

struct RawAction {
  NameMatch match;
  Ticks start{0};
  Ticks end{0};
  long long pid{0};
  long long tid{0};
  int slice{-1};  ///< a ppsim trace's `slice` arg (a sliced run); -1 = none
};

struct RawSpan {
  std::string name;
  Ticks start{0};
  Ticks end{0};
  long long pid{0};
};

// A communication call with its size (a record_param_comms range), or a PyTorch send action;
// paired up per thread once the file is read.
struct RawComm {
  Ticks start{0};
  Ticks end{0};
  long long pid{0};
  long long tid{0};
  double bytes{0};
};
struct RawSend {
  MeasuredMessage message;
  Ticks start{0};
  Ticks end{0};
  long long pid{0};
  long long tid{0};
};

struct ChromeFile {
  std::optional<int> rank;  ///< distributedInfo.rank
  bool ppsim{false};        ///< otherData.schema ppsim.trace/1, or ppsim's task args
  std::vector<RawAction> cpu;
  std::vector<RawAction> gpu;
  std::vector<RawSpan> spans;
  std::vector<RawComm> sized;  ///< communication calls with their bytes
  std::vector<RawSend> sends;  ///< PyTorch's send actions (CPU side)
  std::vector<std::pair<MeasuredMessage, int>> ppsim_messages;  ///< with their slice
  NameCounts names;
  std::size_t comm_skipped{0};
  std::size_t kept{0};
};

// The SAX handler: keeps what one event says until its object closes, then decides.
class ChromeSax : public nlohmann::json_sax<json> {
public:
  ChromeSax(ChromeFile& file, NameMatcher& matcher) : file_(file), matcher_(matcher) {}

  std::string error;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override {
    return number(static_cast<double>(v), std::to_string(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    return number(static_cast<double>(v), std::to_string(v));
  }
  bool number_float(number_float_t v, const string_t& raw) override { return number(v, raw); }
  bool string(string_t& s) override {
    if (in_event_field()) {
      if (key_ == "name") ev_.name = std::move(s);
      else if (key_ == "cat") ev_.cat = std::move(s);
      else if (key_ == "ph") ev_.ph = std::move(s);
      else if (key_ == "pid") ev_.pid = text_id(s);
      else if (key_ == "tid") ev_.tid = text_id(s);
    } else if (depth_ == args_depth() && in_args_ && key_ == "task") {
      ev_.task = std::move(s);
    } else if (depth_ == args_depth() && in_args_ && key_ == "dtype") {
      ev_.dtype = std::move(s);
    } else if (depth_ == 2 && top_key_ == "otherData" && key_ == "schema") {
      if (s == "ppsim.trace/1") file_.ppsim = true;
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override {
    if (!enter()) return false;
    if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
      ev_ = Event{};
      in_event_ = true;
    } else if (in_event_ && depth_ == events_depth_ + 2 && key_ == "args") {
      in_args_ = true;
    }
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) top_key_ = k;
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    if (in_event_ && depth_ == events_depth_ + 1) {
      in_event_ = false;
      if (!take_event()) return false;
    } else if (in_args_ && depth_ == args_depth()) {
      in_args_ = false;
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (!enter()) return false;
    // The object form's traceEvents, or the array form: the whole document is the events.
    if ((depth_ == 2 && top_key_ == "traceEvents") || depth_ == 1) events_depth_ = depth_;
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_depth_ = 0;
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error = fmt::format("not valid JSON at byte {}: {}", position, excerpt(e.what(), 160));
    return false;
  }

private:
  struct Event {
    std::string name, cat, ph, task, dtype;
    double nelems{-1};  ///< max(In, Out msg nelems) of a communication call; -1 = none
    double bytes{-1};   ///< a ppsim message's args.bytes; -1 = none
    std::optional<Ticks> ts, dur;
    long long pid{0}, tid{0};
    int slice{-1};
    bool bad_time{false};
  };

  [[nodiscard]] int args_depth() const { return events_depth_ + 2; }
  [[nodiscard]] bool in_event_field() const { return in_event_ && depth_ == events_depth_ + 1; }

  bool enter() {
    if (++depth_ > limits::kMaxJsonDepth) {
      error = fmt::format("nested deeper than {} levels", limits::kMaxJsonDepth);
      return false;
    }
    return true;
  }
  bool scalar() { return true; }

  // Kineto writes pid/tid as numbers, and as strings for its pseudo-processes ("Spans").
  static long long text_id(const std::string& s) {
    long long v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc{} && p == s.data() + s.size() ? v : -1;
  }

  bool number(double v, const std::string& raw) {
    if (in_event_field()) {
      if (key_ == "ts" || key_ == "dur") {
        const auto t = raw_us_to_ticks(raw, v);
        if (!t) ev_.bad_time = true;
        (key_ == "ts" ? ev_.ts : ev_.dur) = t;
      } else if (key_ == "pid" || key_ == "tid") {
        // An id beyond 64 bits is no process of ours (and must not overflow the cast).
        (key_ == "pid" ? ev_.pid : ev_.tid) =
            std::isfinite(v) && std::abs(v) < 1e18 ? static_cast<long long>(v) : -1;
      }
    } else if (depth_ == args_depth() && in_args_ &&
               (key_ == "In msg nelems" || key_ == "Out msg nelems" || key_ == "bytes")) {
      // a size out of range says nothing: the event is not taken as a message
      if (!std::isfinite(v) || v < 0 || v > limits::kMaxMessageBytes) return true;
      if (key_ == "bytes") ev_.bytes = v;
      else ev_.nelems = std::max(ev_.nelems, v);
    } else if (depth_ == args_depth() && in_args_ && key_ == "slice") {
      if (v >= 0 && v < limits::kMaxSlices && v == std::floor(v)) ev_.slice = static_cast<int>(v);
      else error = fmt::format("event '{}': slice {} is out of range (0..{})", excerpt(ev_.name),
                               raw, limits::kMaxSlices - 1);
    } else if (depth_ == 2 && top_key_ == "distributedInfo" && key_ == "rank") {
      if (v >= 0 && v < limits::kMaxDevices && v == std::floor(v)) file_.rank = static_cast<int>(v);
      else error = fmt::format("distributedInfo.rank {} is out of range (0..{})", raw,
                               limits::kMaxDevices - 1);
    }
    return error.empty();
  }

  bool take_event() {
    if (ev_.ph != "X") return true;
    if (ev_.bad_time) {
      error = fmt::format("event '{}': a time out of range (at most {:g} us)", excerpt(ev_.name),
                          kMaxTraceUs);
      return false;
    }
    if (!ev_.ts || !ev_.dur) return true;
    if (*ev_.dur < 0 || *ev_.dur > static_cast<Ticks>(limits::kMaxMs * 1e6)) {
      error = fmt::format("event '{}': duration {} us is out of range", excerpt(ev_.name),
                          static_cast<double>(*ev_.dur) / 1000.0);
      return false;
    }
    RawAction a;
    a.start = *ev_.ts;
    a.end = *ev_.ts + *ev_.dur;
    a.pid = ev_.pid;
    a.tid = ev_.tid;
    // Sizes of messages: a ppsim message slice, or a communication call on the CPU (its GPU
    // kernel carries the same sizes: counted once).
    if (ev_.cat == "comm" && ev_.bytes >= 0 && ev_.tid != 0) {
      if (const auto msg = ppsim_message(ev_.name); msg && file_.ppsim_messages.size() < kMaxSpans) {
        file_.ppsim_messages.push_back(*msg);
        file_.ppsim_messages.back().first.bytes = ev_.bytes;
      }
      return true;
    }
    if (ev_.nelems >= 0 && ev_.cat != "kernel") {
      const double size = dtype_bytes(ev_.dtype);
      if (size > 0 && file_.sized.size() < kMaxSpans)
        file_.sized.push_back({a.start, a.end, a.pid, a.tid, std::min(ev_.nelems * size, limits::kMaxMessageBytes)});
      return true;
    }
    // ppsim's own traces: args.task on the compute thread, cat the kind.
    if (!ev_.task.empty() && ev_.tid == 0 && ev_.cat != "summary" && ev_.cat != "comm") {
      try {
        a.match.task = parse_task(ev_.task);
      } catch (const ConfigError&) {
        error = fmt::format("event '{}': task '{}' is not a task", excerpt(ev_.name),
                            excerpt(ev_.task));
        return false;
      }
      a.match.what = NameMatch::What::action;
      a.slice = ev_.slice;
      file_.ppsim = true;
      return keep(file_.cpu, std::move(a));
    }
    const NameMatch m = matcher_.match(ev_.name);
    switch (m.what) {
    case NameMatch::What::none:
      if (ev_.cat != "kernel" && ev_.cat != "cuda_runtime" && ev_.cat != "gpu_memcpy" &&
          ev_.cat != "gpu_memset")
        file_.names.add(ev_.name);
      return true;
    case NameMatch::What::comm:
      ++file_.comm_skipped;
      if (m.send && ev_.cat != "gpu_user_annotation" && file_.sends.size() < kMaxSpans)
        file_.sends.push_back({*m.send, a.start, a.end, a.pid, a.tid});
      return true;
    case NameMatch::What::optimizer:
      if (ev_.cat == "gpu_user_annotation") return true;
      if (file_.spans.size() >= kMaxSpans) return true;
      file_.spans.push_back({ev_.name, a.start, a.end, a.pid});
      return true;
    case NameMatch::What::action:
      a.match = m;
      return keep(ev_.cat == "gpu_user_annotation" ? file_.gpu : file_.cpu, std::move(a));
    }
    return true;
  }

  bool keep(std::vector<RawAction>& to, RawAction a) {
    if (++file_.kept > kMaxActions) {
      error = fmt::format("more than {} pipeline actions (at most {} stage-micro-batches of 3 "
                          "parts each)",
                          kMaxActions, limits::kMaxStageMicrobatches);
      return false;
    }
    to.push_back(std::move(a));
    return true;
  }

  static constexpr std::size_t kMaxActions =
      static_cast<std::size_t>(limits::kMaxStageMicrobatches) * 3;
  static constexpr std::size_t kMaxSpans = 1'000'000;

  ChromeFile& file_;
  NameMatcher& matcher_;
  int depth_{0};
  int events_depth_{0};
  std::string top_key_;
  std::string key_;
  bool in_event_{false};
  bool in_args_{false};
  Event ev_;
};

ChromeFile read_chrome(InputBuf& in, const std::string& where, NameMatcher& matcher,
                       std::size_t max_bytes) {
  ChromeFile file;
  ChromeSax sax(file, matcher);
  std::istream stream(&in);
  bool ok = false;
  try {
    ok = json::sax_parse(stream, &sax, json::input_format_t::json, /*strict=*/true);
  } catch (const json::exception& e) {
    sax.error = fmt::format("not valid JSON: {}", excerpt(e.what(), 160));
  }
  if (in.over_limit())
    throw ConfigError(fmt::format("{}: the trace is larger than {} (decompressed); at most that "
                                  "is read",
                                  where, human_bytes(static_cast<double>(max_bytes))));
  if (in.read_error())
    throw ConfigError(fmt::format("{}: cannot read the trace (corrupt or truncated gzip data)",
                                  where));
  if (!ok || !sax.error.empty())
    throw ConfigError(fmt::format("{}: {}", where, sax.error.empty() ? "not valid JSON" : sax.error));
  return file;
}

// The sizes of a file's send actions: the bytes of the communication calls their thread made
// inside them. Two searches a send in the calls sorted by (thread, start), with running sums:
// O((sends + calls) log calls) however the ranges nest or overlap.
std::vector<MeasuredMessage> sized_sends(ChromeFile& f) {
  std::vector<MeasuredMessage> out;
  if (f.sends.empty() || f.sized.empty()) return out;
  const auto key = [](const RawComm& c) { return std::tuple(c.pid, c.tid, c.start); };
  std::sort(f.sized.begin(), f.sized.end(),
            [&](const RawComm& a, const RawComm& b) { return key(a) < key(b); });
  std::vector<double> before(f.sized.size() + 1, 0);  // bytes of the calls before index i
  for (std::size_t i = 0; i < f.sized.size(); ++i) before[i + 1] = before[i] + f.sized[i].bytes;
  const auto at = [&](const std::tuple<long long, long long, Ticks>& k, bool after) {
    const auto it = after ? std::upper_bound(f.sized.begin(), f.sized.end(), k,
                                             [&](const auto& x, const RawComm& c) { return x < key(c); })
                          : std::lower_bound(f.sized.begin(), f.sized.end(), k,
                                             [&](const RawComm& c, const auto& x) { return key(c) < x; });
    return static_cast<std::size_t>(it - f.sized.begin());
  };
  for (const RawSend& s : f.sends) {
    const double bytes = before[at({s.pid, s.tid, s.end}, true)] - before[at({s.pid, s.tid, s.start}, false)];
    if (!(bytes > 0)) continue;
    MeasuredMessage m = s.message;
    m.bytes = std::min(bytes, limits::kMaxMessageBytes);
    out.push_back(m);
  }
  return out;
}

// One message per (part, stage, micro-batch): the first given (a trace of several iterations
// repeats each), sorted.
std::vector<MeasuredMessage> one_per_message(std::vector<MeasuredMessage> all) {
  const auto key = [](const MeasuredMessage& m) { return std::tuple(m.part, m.stage, m.microbatch); };
  std::stable_sort(all.begin(), all.end(),
                   [&](const MeasuredMessage& a, const MeasuredMessage& b) { return key(a) < key(b); });
  all.erase(std::unique(all.begin(), all.end(),
                        [&](const MeasuredMessage& a, const MeasuredMessage& b) { return key(a) == key(b); }),
            all.end());
  return all;
}

// ------------------------------------------------------------------------------------------
// Megatron's timer dumps (Victarry's patch, ENABLE_PP_TIMER): one JSON object per rank,
// `forward-{mb}-start`/`-end` and `backward-...` (interleaved: `forward-{chunk}-{mb}-...`) in
// milliseconds since a barrier, and `total-execution-time`. The file name carries the shape:
// `event_times_PP{pp}_VPP{vpp}_..._pp_rank_{r}_...json`.

struct MegatronFile {
  int pp_rank{-1};
  int pp{0};
  std::vector<RawAction> actions;  // task stage = chunk (mapped to a stage once pp is known)
};

std::optional<int> number_after(std::string_view name, std::string_view tag) {
  const auto at = name.find(tag);
  if (at == std::string_view::npos) return std::nullopt;
  int v = 0;
  const char* b = name.data() + at + tag.size();
  const auto [p, ec] = std::from_chars(b, name.data() + name.size(), v);
  if (ec != std::errc{} || p == b || v < 0 || v >= limits::kMaxDevices) return std::nullopt;
  return v;
}

MegatronFile read_megatron(std::string_view text, const std::string& where) {
  const json doc = detail::parse_document(text, where);
  if (!doc.is_object())
    throw ConfigError(fmt::format("{}: a Megatron timer dump is one JSON object of times", where));
  MegatronFile f;
  const std::string_view base = std::string_view(where).substr(where.find_last_of('/') + 1);
  f.pp_rank = number_after(base, "pp_rank_").value_or(-1);
  f.pp = number_after(base, "_PP").value_or(0);
  struct Half {
    std::optional<Ticks> start, end;
  };
  std::map<std::tuple<int, int, int>, Half> halves;  // (kind, chunk, mb)
  static const std::regex key_re(R"(^(forward|backward)-(?:(\d+)-)?(\d+)-(start|end)$)");
  for (const auto& [key, value] : doc.items()) {
    std::smatch m;
    if (!std::regex_match(key, m, key_re)) continue;
    if (!value.is_number())
      throw ConfigError(fmt::format("{}: /{}: expected a number of milliseconds", where,
                                    excerpt(key)));
    const double ms = value.get<double>();
    if (!std::isfinite(ms) || std::abs(ms) > limits::kMaxMs)
      throw ConfigError(fmt::format("{}: /{}: {} ms is out of range", where, excerpt(key), ms));
    bool ok = true;
    const int chunk = m[2].matched ? group_int(m, 2, limits::kMaxDevices, ok) : 0;
    const int mb = group_int(m, 3, limits::kMaxMicrobatches - 1, ok);
    if (!ok)
      throw ConfigError(fmt::format("{}: /{}: an index out of range", where, excerpt(key)));
    const int kind = m[1] == "forward" ? 0 : 1;
    Half& h = halves[{kind, chunk, mb}];
    (m[4] == "start" ? h.start : h.end) = static_cast<Ticks>(std::llround(ms * 1e6));
  }
  for (const auto& [k, h] : halves) {
    const auto [kind, chunk, mb] = k;
    const char* name = kind == 0 ? "forward" : "backward";
    if (!h.start || !h.end)
      throw ConfigError(fmt::format("{}: {}-{}{}: has a{} but no {}", where, name,
                                    chunk > 0 ? fmt::format("{}-", chunk) : "", mb,
                                    h.start ? " start" : "n end", h.start ? "end" : "start"));
    if (*h.end < *h.start)
      throw ConfigError(fmt::format("{}: {}-{}: ends before it starts", where, name, mb));
    RawAction a;
    a.match.what = NameMatch::What::action;
    a.match.task = Task::make(kind == 0 ? Kind::F : Kind::BW, chunk, mb);
    a.start = *h.start;
    a.end = *h.end;
    f.actions.push_back(a);
  }
  return f;
}

// ------------------------------------------------------------------------------------------
// Assembly: ranks, the clock each rank's actions are on, the iteration kept.

std::optional<int> rank_in_name(std::string_view path) {
  const std::string_view base = path.substr(path.find_last_of('/') + 1);
  std::string lower(base);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::regex re(R"(rank[-_]?(\d+))");
  std::smatch m;
  if (!std::regex_search(lower, m, re)) return std::nullopt;
  bool ok = true;
  const int r = group_int(m, 1, limits::kMaxDevices - 1, ok);
  return ok ? std::optional<int>(r) : std::nullopt;
}

// One rank's actions with their stages resolved, and its spans.
struct RankEvents {
  std::vector<RawAction> actions;
  std::vector<RawSpan> spans;
  bool device_time{false};
};

// On the GPU, a PP range is projected on every stream its kernels ran on (the compute stream and
// NCCL's): the compute stream is the one that holds the most of them.
std::vector<RawAction> compute_stream(std::vector<RawAction> gpu) {
  std::map<long long, std::size_t> per_tid;
  for (const RawAction& a : gpu) ++per_tid[a.tid];
  long long best = 0;
  std::size_t most = 0;
  for (const auto& [tid, n] : per_tid)
    if (n > most) {
      most = n;
      best = tid;
    }
  std::erase_if(gpu, [&](const RawAction& a) { return a.tid != best; });
  return gpu;
}

std::string map_suggestion(const std::vector<std::pair<std::string, std::size_t>>& top) {
  for (const auto& [name, count] : top) {
    if (name.find_first_of("0123456789") == std::string::npos) continue;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const char* kind = lower.find("back") != std::string::npos || lower.find("bwd") != std::string::npos
                           ? "BW"
                           : lower.find("weight") != std::string::npos ? "W" : "F";
    // Escape the name, then the last run of digits is the micro-batch, one before it the stage.
    std::vector<std::pair<std::size_t, std::size_t>> runs;
    for (std::size_t i = 0; i < name.size();) {
      if (std::isdigit(static_cast<unsigned char>(name[i]))) {
        std::size_t j = i;
        while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
        runs.emplace_back(i, j);
        i = j;
      } else {
        ++i;
      }
    }
    std::string re;
    for (std::size_t i = 0; i < name.size();) {
      if (!runs.empty() && i == runs.back().first) {
        re += "(?<mb>\\d+)";
        i = runs.back().second;
        continue;
      }
      if (runs.size() >= 2 && i == runs[runs.size() - 2].first) {
        re += "(?<stage>\\d+)";
        i = runs[runs.size() - 2].second;
        continue;
      }
      const char c = name[i++];
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) re += '\\';
      re += c;
    }
    return fmt::format(" (e.g. --map '{}={}')", excerpt(re, 120), kind);
  }
  return "";
}

[[noreturn]] void no_actions(const NameCounts& names, const std::vector<std::string>& files) {
  const auto top = names.top(8);
  std::string list;
  for (const auto& [name, count] : top)
    list += fmt::format("{}'{}' x{}", list.empty() ? "" : ", ", excerpt(name, 50), count);
  throw ConfigError(fmt::format(
      "{}: no pipeline action recognised (PyTorch's `PP:0F1` ranges, ppsim's tasks, Megatron's "
      "forward-N-start timers){}; give --map REGEX=KIND with groups (?<stage>..), (?<mb>..) "
      "or (?<chunk>..){}",
      files.size() == 1 ? excerpt(files[0]) : fmt::format("{} files", files.size()),
      list.empty() ? "" : "; its most frequent ranges: " + list, map_suggestion(top)));
}

void check_shape(const ImportedTrace& t) {
  std::vector<char> has(ix(t.ranks), 0);
  for (const MeasuredAction& a : t.actions) has[ix(a.rank)] = 1;
  std::string missing;
  int n = 0;
  for (int r = 0; r < t.ranks; ++r)
    if (!has[ix(r)] && n++ < 8) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
  if (n > 0)
    throw ConfigError(fmt::format("ranks missing: no action of rank {}{} (of ranks 0..{}); give "
                                  "every rank's trace",
                                  missing, n > 8 ? fmt::format(" and {} more", n - 8) : "",
                                  t.ranks - 1));
}

// Keeps the iteration asked for: the k-th occurrence of a task on its rank is iteration k.
void keep_iteration(ImportedTrace& t, std::vector<RankEvents>& ranks,
                    const std::optional<int>& asked) {
  int complete = std::numeric_limits<int>::max();
  std::vector<std::vector<int>> occurrence(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    auto& acts = ranks[r].actions;
    std::stable_sort(acts.begin(), acts.end(),
                     [](const RawAction& a, const RawAction& b) { return a.start < b.start; });
    std::map<Task, int> seen;
    occurrence[r].reserve(acts.size());
    for (const RawAction& a : acts) occurrence[r].push_back(seen[a.match.task]++);
    for (const auto& [task, n] : seen) complete = std::min(complete, n);
  }
  if (complete == std::numeric_limits<int>::max()) complete = 0;
  t.iterations = std::max(1, complete);
  if (asked && (*asked < 0 || *asked >= t.iterations))
    throw ConfigError(fmt::format("--iteration {}: the trace holds {} complete iteration{} "
                                  "(0..{})",
                                  *asked, t.iterations, t.iterations == 1 ? "" : "s",
                                  t.iterations - 1));
  t.iteration = asked.value_or(t.iterations - 1);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    auto& acts = ranks[r].actions;
    Ticks begin = std::numeric_limits<Ticks>::max(), next = std::numeric_limits<Ticks>::max();
    std::vector<RawAction> kept;
    for (std::size_t i = 0; i < acts.size(); ++i) {
      const int k = occurrence[r][i];
      if (k == t.iteration) {
        kept.push_back(acts[i]);
        begin = std::min(begin, acts[i].start);
      } else if (k == t.iteration + 1) {
        next = std::min(next, acts[i].start);
      }
    }
    acts = std::move(kept);
    // An optimizer step belongs to the iteration it follows.
    std::erase_if(ranks[r].spans, [&](const RawSpan& s) { return s.end <= begin || s.start >= next; });
  }
}

// PyTorch's old vocabulary had no I: a B followed by a W of its stage and micro-batch was the
// backward for the input.
void old_notation(ImportedTrace& t) {
  std::set<std::pair<int, int>> w;
  for (const MeasuredAction& a : t.actions) {
    if (a.task.kind == Kind::B) return;
    if (a.task.kind == Kind::W) w.emplace(a.task.stage, a.task.microbatch);
  }
  for (MeasuredAction& a : t.actions)
    if (a.task.kind == Kind::BW && w.contains({a.task.stage, a.task.microbatch}))
      a.task.kind = Kind::B;
}

ImportedTrace assemble(std::vector<RankEvents> ranks, const std::string& format,
                       std::vector<std::string> files, const ImportOptions& o) {
  ImportedTrace t;
  t.format = format;
  // One merged file holds every rank: name it once.
  for (std::string& f : files)
    if (std::find(t.files.begin(), t.files.end(), f) == t.files.end()) t.files.push_back(std::move(f));
  t.ranks = static_cast<int>(ranks.size());
  for (const RankEvents& r : ranks) t.device_time = t.device_time || r.device_time;
  keep_iteration(t, ranks, o.iteration);
  for (int r = 0; r < t.ranks; ++r) {
    RankEvents& re = ranks[ix(r)];
    for (const RawAction& a : re.actions) {
      MeasuredAction m{r, a.match.task, a.start, a.end};
      // A stage named by a chunk (Megatron's, a --map's), or not at all (one stage per rank).
      if (a.match.chunk >= 0) m.task.stage = a.match.chunk * t.ranks + r;
      else if (!a.match.stage_given) m.task.stage = r;
      t.actions.push_back(m);
    }
    for (const RawSpan& s : re.spans) t.spans.push_back({r, s.name, s.start, s.end});
  }
  old_notation(t);
  check_shape(t);
  // Every time the engine derives (offsets, gaps, sums) stays far inside Ticks' range.
  Ticks first = std::numeric_limits<Ticks>::max(), last = std::numeric_limits<Ticks>::min();
  for (const MeasuredAction& a : t.actions) {
    first = std::min(first, a.start);
    last = std::max(last, a.end);
  }
  if (static_cast<double>(last) - static_cast<double>(first) > static_cast<double>(limits::kMaxTotalTicks))
    throw ConfigError(fmt::format("import: the actions span more than {} ms; at most that",
                                  static_cast<double>(limits::kMaxTotalTicks) / 1e6));
  return t;
}

struct Source {
  std::string name;
  std::string_view text;  ///< in memory; empty view with `file` = read the file
  bool file{false};
};

std::unique_ptr<InputBuf> open_source(const Source& s, std::size_t max_bytes) {
  if (s.file) return std::make_unique<InputBuf>(s.name, max_bytes);
  return std::make_unique<InputBuf>(s.text, max_bytes);
}

TraceFormat detect(const Source& s) {
  const auto in = open_source(s, limits::kMaxTraceBytes);
  const std::string head = head_of(*in, 1 << 16);
  if (in->read_error())
    throw ConfigError(fmt::format("{}: cannot read the trace (corrupt or truncated gzip data)",
                                  excerpt(s.name)));
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw ConfigError(fmt::format("{}: the trace is empty", excerpt(s.name)));
  if (head[first] == '[' || head.find("\"traceEvents\"") != std::string::npos)
    return head.find("ppsim.trace/1") != std::string::npos ? TraceFormat::ppsim : TraceFormat::kineto;
  if (head.find("\"forward-") != std::string::npos || head.find("\"backward-") != std::string::npos)
    return TraceFormat::megatron_timers;
  throw ConfigError(fmt::format("{}: neither a Chrome trace (Kineto, ppsim) nor a Megatron timer "
                                "dump; give --format",
                                excerpt(s.name)));
}

ImportedTrace read_sources(const std::vector<Source>& sources, const ImportOptions& o) {
  if (sources.empty()) throw ConfigError("import: needs at least one trace");
  if (sources.size() > static_cast<std::size_t>(limits::kMaxDevices))
    throw ConfigError(fmt::format("import: {} traces; at most {} ranks", sources.size(),
                                  limits::kMaxDevices));
  TraceFormat format = o.format;
  if (format == TraceFormat::automatic) format = detect(sources.front());
  std::vector<std::string> names;
  for (const Source& s : sources) names.push_back(s.name);

  if (format == TraceFormat::megatron_timers) {
    std::vector<MegatronFile> files;
    for (const Source& s : sources) {
      const std::string text = s.file ? read_text_file(s.name, "timer dump")
                                      : std::string(s.text.substr(0, limits::kMaxInputBytes + 1));
      if (text.size() > limits::kMaxInputBytes)
        throw ConfigError(fmt::format("{}: a timer dump larger than {}", excerpt(s.name),
                                      human_bytes(static_cast<double>(limits::kMaxInputBytes))));
      files.push_back(read_megatron(text, excerpt(s.name)));
    }
    const int n = static_cast<int>(files.size());
    std::vector<RankEvents> ranks(files.size());
    std::vector<int> owner(files.size(), -1);
    for (int i = 0; i < n; ++i) {
      MegatronFile& f = files[ix(i)];
      const int r = f.pp_rank >= 0 ? f.pp_rank : i;
      if (r >= n)
        throw ConfigError(fmt::format("{}: pp_rank {} but only {} files", excerpt(names[ix(i)]), r, n));
      if (owner[ix(r)] >= 0)
        throw ConfigError(fmt::format("{} and {}: both are pp rank {}", excerpt(names[ix(owner[ix(r)])]),
                                      excerpt(names[ix(i)]), r));
      owner[ix(r)] = i;
      if (f.pp > 0 && f.pp != n)
        throw ConfigError(fmt::format("{}: a dump of PP{} (ranks missing: {} files given)",
                                      excerpt(names[ix(i)]), f.pp, n));
      for (RawAction& a : f.actions) {
        a.match.chunk = a.match.task.stage;  // the chunk: stage = chunk * pp + rank
        ranks[ix(r)].actions.push_back(a);
      }
    }
    std::vector<std::string> ordered(files.size());
    for (int r = 0; r < n; ++r) ordered[ix(r)] = names[ix(owner[ix(r)])];
    return assemble(std::move(ranks), "megatron-timers", std::move(ordered), o);
  }

  // Chrome traces: Kineto (one file per rank, or one merged file) or ppsim's.
  NameMatcher matcher(o.maps);
  std::vector<ChromeFile> files;
  for (const Source& s : sources) {
    const auto in = open_source(s, o.max_bytes);
    files.push_back(read_chrome(*in, excerpt(s.name), matcher, o.max_bytes));
  }
  NameCounts names_seen;
  std::size_t kept = 0, comm = 0;
  for (const ChromeFile& f : files) {
    names_seen.merge(f.names);
    kept += f.cpu.size() + f.gpu.size();
    comm += f.comm_skipped;
  }
  if (kept == 0) no_actions(names_seen, names);

  std::vector<RankEvents> ranks;
  std::vector<std::string> ordered;
  const auto rank_slot = [&](int r, const std::string& name) -> RankEvents& {
    if (r >= limits::kMaxDevices)
      throw ConfigError(fmt::format("{}: rank {} is out of range", excerpt(name), r));
    if (ranks.size() <= ix(r)) {
      ranks.resize(ix(r) + 1);
      ordered.resize(ix(r) + 1);
    }
    return ranks[ix(r)];
  };
  const bool ppsim = std::any_of(files.begin(), files.end(), [](const ChromeFile& f) { return f.ppsim; });
  int slices = 1;
  if (ppsim) {
    if (files.size() != 1)
      throw ConfigError("import: a ppsim trace holds every device; give one such file");
    // A sliced run's tasks carry their slice: a unit is mb * slices + slice.
    for (const RawAction& a : files[0].cpu) slices = std::max(slices, a.slice + 1);
    for (const RawAction& a : files[0].cpu)
      if (slices > 1 && (a.slice < 0 || a.match.task.microbatch % slices != a.slice))
        throw ConfigError(fmt::format("{}: task {} says slice {}, but the trace's tasks are cut "
                                      "into {} slices (a unit is micro-batch x slices + slice)",
                                      excerpt(names[0]), to_string(a.match.task), a.slice, slices));
    // Device d is process d + 1.
    for (RawAction& a : files[0].cpu) {
      if (a.pid < 1 || a.pid > limits::kMaxDevices)
        throw ConfigError(fmt::format("{}: pid {} is not a device of a ppsim trace", excerpt(names[0]), a.pid));
      rank_slot(static_cast<int>(a.pid - 1), names[0]).actions.push_back(a);
    }
    for (RawSpan& s : files[0].spans)
      if (s.pid >= 1 && s.pid <= static_cast<long long>(ranks.size()))
        ranks[ix(static_cast<int>(s.pid - 1))].spans.push_back(s);
    for (auto& n : ordered) n = names[0];
  } else if (files.size() == 1 && !files[0].rank) {
    // One merged file without a rank: each process with actions is a rank, by pid (the GPU's
    // processes are its devices, in the same order).
    std::set<long long> pids;
    for (const RawAction& a : files[0].cpu) pids.insert(a.pid);
    std::map<long long, int> rank_of;
    for (const long long pid : pids) rank_of.emplace(pid, static_cast<int>(rank_of.size()));
    std::set<long long> gpids;
    for (const RawAction& a : files[0].gpu) gpids.insert(a.pid);
    std::map<long long, int> grank_of;
    for (const long long pid : gpids) grank_of.emplace(pid, static_cast<int>(grank_of.size()));
    const int n = static_cast<int>(std::max(pids.size(), gpids.size()));
    for (int r = 0; r < n; ++r) (void)rank_slot(r, names[0]);
    std::vector<std::vector<RawAction>> cpu(ix(n)), gpu(ix(n));
    for (RawAction& a : files[0].cpu) cpu[ix(rank_of[a.pid])].push_back(a);
    for (RawAction& a : files[0].gpu) gpu[ix(grank_of[a.pid])].push_back(a);
    for (int r = 0; r < n; ++r) {
      ranks[ix(r)].device_time = !gpu[ix(r)].empty();
      ranks[ix(r)].actions = gpu[ix(r)].empty() ? std::move(cpu[ix(r)]) : compute_stream(std::move(gpu[ix(r)]));
    }
    for (RawSpan& s : files[0].spans)
      if (rank_of.contains(s.pid)) ranks[ix(rank_of[s.pid])].spans.push_back(s);
    for (auto& nm : ordered) nm = names[0];
  } else {
    std::vector<int> owner;
    for (std::size_t i = 0; i < files.size(); ++i) {
      ChromeFile& f = files[i];
      const int r = f.rank ? *f.rank : rank_in_name(names[i]).value_or(static_cast<int>(i));
      RankEvents& re = rank_slot(r, names[i]);
      if (!ordered[ix(r)].empty())
        throw ConfigError(fmt::format("{} and {}: both are rank {}", excerpt(ordered[ix(r)]),
                                      excerpt(names[i]), r));
      ordered[ix(r)] = names[i];
      re.device_time = !f.gpu.empty();
      re.actions = f.gpu.empty() ? std::move(f.cpu) : compute_stream(std::move(f.gpu));
      re.spans = std::move(f.spans);
    }
  }
  std::vector<MeasuredMessage> messages;
  for (ChromeFile& f : files) {
    for (const MeasuredMessage& m : sized_sends(f)) messages.push_back(m);
    for (auto [m, slice] : f.ppsim_messages) {
      if (slice >= slices || (slices > 1 && slice < 0)) continue;  // not of this run's units
      if (slices > 1) m.microbatch = m.microbatch * slices + slice;
      messages.push_back(m);
    }
  }
  ImportedTrace t = assemble(std::move(ranks), ppsim ? "ppsim" : "kineto", std::move(ordered), o);
  t.comm_actions_skipped = comm;
  t.slices = slices;
  t.messages = one_per_message(std::move(messages));
  return t;
}

// Named groups of a --map: `(?<name>` becomes a plain group, and its number is recorded.
std::string strip_named_groups(std::string_view re, std::map<std::string, int>& groups,
                               std::string_view where) {
  std::string out;
  int group = 0;
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      out += c;
      out += re[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      continue;
    }
    if (c == '(') {
      if (re.substr(i).starts_with("(?<") && !re.substr(i).starts_with("(?<=") &&
          !re.substr(i).starts_with("(?<!")) {
        const auto close = re.find('>', i + 3);
        if (close == std::string_view::npos)
          throw ConfigError(fmt::format("{}: a named group without '>'", where));
        const std::string name(re.substr(i + 3, close - i - 3));
        if (name != "stage" && name != "mb" && name != "chunk")
          throw ConfigError(fmt::format("{}: unknown group '{}' (valid: stage, mb, chunk)", where,
                                        excerpt(name)));
        if (groups.contains(name))
          throw ConfigError(fmt::format("{}: group '{}' twice", where, name));
        groups[name] = ++group;
        out += '(';
        i = close;
        continue;
      }
      if (!re.substr(i).starts_with("(?")) ++group;
    }
    out += c;
  }
  return out;
}

} // namespace

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
  case TraceFormat::automatic: return "auto";
  case TraceFormat::kineto: return "kineto";
  case TraceFormat::megatron_timers: return "megatron-timers";
  case TraceFormat::ppsim: return "ppsim";
  }
  return "?";
}

TraceFormat parse_trace_format(std::string_view text) {
  for (const TraceFormat f : {TraceFormat::automatic, TraceFormat::kineto,
                              TraceFormat::megatron_timers, TraceFormat::ppsim})
    if (text == trace_format_name(f)) return f;
  throw ConfigError(fmt::format("--format '{}': expected auto, kineto, megatron-timers or ppsim",
                                excerpt(text)));
}

TraceMap parse_trace_map(std::string_view text) {
  const auto where = fmt::format("--map '{}'", excerpt(text));
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw ConfigError(fmt::format("{}: expected REGEX=KIND, e.g. 'fwd_(?<mb>\\d+)=F'", where));
  if (text.size() > 1000) throw ConfigError(fmt::format("{}: longer than 1000 characters", where));
  TraceMap m;
  m.text = std::string(text);
  const std::string kind(trim(text.substr(eq + 1)));
  if (kind == "optimizer") m.optimizer = true;
  else if (kind == "F") m.kind = Kind::F;
  else if (kind == "B") m.kind = Kind::B;
  else if (kind == "W") m.kind = Kind::W;
  else if (kind == "BW") m.kind = Kind::BW;
  else
    throw ConfigError(fmt::format("{}: unknown kind '{}' (valid: F, B, W, BW, optimizer)", where,
                                  excerpt(kind)));
  std::map<std::string, int> groups;
  const std::string re = strip_named_groups(text.substr(0, eq), groups, where);
  try {
    m.pattern = std::regex(re, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw ConfigError(fmt::format("{}: not a regular expression ({})", where, e.what()));
  }
  m.stage_group = groups.contains("stage") ? groups["stage"] : 0;
  m.mb_group = groups.contains("mb") ? groups["mb"] : 0;
  m.chunk_group = groups.contains("chunk") ? groups["chunk"] : 0;
  if (!m.optimizer && m.mb_group == 0)
    throw ConfigError(fmt::format("{}: an action needs the micro-batch: a group (?<mb>\\d+)", where));
  if (m.stage_group != 0 && m.chunk_group != 0)
    throw ConfigError(fmt::format("{}: give (?<stage>..) or (?<chunk>..), not both", where));
  return m;
}

ImportedTrace read_traces(const std::vector<std::string>& paths, const ImportOptions& options) {
  std::vector<Source> sources;
  for (const std::string& p : paths) sources.push_back({p, {}, true});
  return read_sources(sources, options);
}

ImportedTrace parse_traces(const std::vector<std::string>& texts,
                           const std::vector<std::string>& names, const ImportOptions& options) {
  std::vector<Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i)
    sources.push_back({i < names.size() ? names[i] : fmt::format("trace {}", i), texts[i], false});
  return read_sources(sources, options);
}

} // namespace ppsim
