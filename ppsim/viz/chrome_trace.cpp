// Chrome Trace Event Format writer, streamed by hand: millions of events without a JSON DOM.
#include "ppsim/viz/chrome_trace.hpp"

#include "ppsim/io/json_text.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/index.hpp"
#include "ppsim/sim/time.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ppsim {

namespace {

constexpr std::size_t flush_bytes = std::size_t{1} << 20;

// The text goes to a buffer that is handed to the stream in large pieces.
class Sink {
public:
  explicit Sink(std::ostream& out) : out_(out) { buf_.reserve(flush_bytes + 4096); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= flush_bytes) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

private:
  std::ostream& out_;
  std::string buf_;
};

class TraceWriter {
public:
  TraceWriter(std::ostream& out, const Run& run)
      : sink_(out), run_(run), tl_(run.timeline), topo_(run.schedule),
        multi_chunk_(run.schedule.chunks() > 1), slices_(run.schedule.slice_count()) {}

  void write() {
    // NOTE: no displayTimeUnit: older Perfetto versions read it as the unit of ts.
    std::string& b = sink_.buf();
    b += "{\"otherData\":{\"schema\":\"ppsim.trace/1\",";
    write_summary();
    b += "},\n\"traceEvents\":[";
    index_comms();
    copies_.assign(ix(tl_.devices), {});
    for (std::uint32_t k = 0; k < tl_.copies.size(); ++k)
      copies_[ix(tl_.copies[k].device)].push_back(k);
    collectives_.assign(ix(tl_.devices), {});
    for (std::uint32_t k = 0; k < tl_.collectives.size(); ++k)
      collectives_[ix(tl_.collectives[k].device)].push_back(k);
    has_recompute_.assign(ix(tl_.devices), false);
    index_subops();
    for (int d = 0; d < tl_.devices; ++d) {
      has_recompute_[ix(d)] = recomputes(d);
      write_metadata(pid_of(d), device_name(d), "compute", d);
      for (int lane = 0; lane < comm_lanes_[ix(d)]; ++lane) write_comm_thread_name(d, lane);
      if (has_recompute_[ix(d)]) write_thread_name(d, recompute_tid(d), "recompute");
      if (!copies_[ix(d)].empty()) write_thread_name(d, copy_tid(d), "copy");
      if (!collectives_[ix(d)].empty()) write_thread_name(d, dp_tid(d), "dp");
      for (int track = 0; track < subop_tracks_[ix(d)]; ++track)
        write_thread_name(d, subop_tid(d, track), track == 0 ? "collectives" : "collectives 2");
    }
    write_summary_track();
    memory_ = memory_series(tl_, run_.costs);
    if (!tl_.copies.empty()) host_memory_ = host_memory_series(tl_);
    for (int d = 0; d < tl_.devices; ++d) write_device(d);
    sink_.buf() += "\n]}\n";
    sink_.flush();
  }

private:
  // What a device's block is made of; sorted by (ts, rank, seq, type, idx).
  enum class Type : std::uint8_t {
    slice, flow_start, flow_end, counter, message, copy, host, recompute, collective, subop
  };
  struct Ev {
    Ticks ts;
    std::int64_t seq;
    std::uint32_t idx;
    std::uint8_t rank;
    Type type;
  };
  static bool before(const Ev& a, const Ev& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.seq != b.seq) return a.seq < b.seq;
    if (a.type != b.type) return a.type < b.type;
    return a.idx < b.idx;
  }

  // Starts a new element of traceEvents.
  std::string& event() {
    std::string& b = sink_.buf();
    b += first_event_ ? "\n" : ",\n";
    first_event_ = false;
    return b;
  }

  // Perfetto's importer treats pid 0 specially: device d is process d + 1.
  static int pid_of(int device) { return device + 1; }
  static std::string device_name(int device) { return "device " + std::to_string(device); }
  // The run's own process, after the devices'.
  int summary_pid() const { return tl_.devices + 1; }

  // "parameters":{...},"metrics":{...}: in otherData for chrome://tracing and as the args of the
  // summary slice, since Perfetto's JSON importer drops otherData.
  void write_summary() {
    std::string& b = sink_.buf();
    const Metrics& m = run_.metrics;
    const auto ms = [](Ticks t) { return ticks_to_ms(t); };
    b += "\"parameters\":{";
    bool first = true;
    for (const auto& [key, value] : run_.parameters) {
      if (!first) b += ',';
      first = false;
      append_json_string(b, key);
      b += ':';
      append_json_string(b, value);
    }
    b += "},\n\"metrics\":{";
    const auto field = [&](const char* key, double x, bool comma = true) {
      b += '"';
      b += key;
      b += "\":";
      append_json_number(b, x);
      if (comma) b += ',';
    };
    field("makespan_ms", ms(m.makespan));
    field("cost_ms", ms(m.cost));
    field("ideal_ms", ms(m.ideal));
    field("bubble_rate", m.bubble_rate);
    field("bubble_over_ideal", m.bubble_over_ideal);
    field("idle_fraction", m.idle_fraction);
    field("peak_memory", m.peak_memory);
    if (run_.costs.memory_unit_bytes > 0) field("peak_memory_bytes", m.peak_memory_bytes);
    if (run_.mem_limit >= 0) field("mem_limit", run_.mem_limit);
    const bool offload = run_.offload.any();
    if (offload) {
      field("exposed_copy_ms", ms(m.exposed_copy));
      field("host_peak_memory", m.host_peak_memory);
    }
    const bool dp = run_.data_parallel.any();
    if (dp) {
      field("exposed_dp_ms", ms(m.exposed_dp));
      field("iteration_time_ms", ms(run_.iterations.iteration_time));
    }
    b += "\"per_device\":[";
    for (std::size_t i = 0; i < m.per_device.size(); ++i) {
      const DeviceMetrics& dm = m.per_device[i];
      b += i == 0 ? "{" : ",{";
      field("device", dm.device);
      field("busy_ms", ms(dm.busy));
      field("span_ms", ms(dm.span));
      field("idle_ms", ms(dm.idle));
      field("peak_memory", dm.peak_memory);
      field("p2p_bytes_sent", dm.p2p_bytes_sent);
      field("p2p_messages", static_cast<double>(dm.p2p_messages));
      if (dm.recompute > 0) field("recompute_ms", ms(dm.recompute));
      if (offload) {
        field("copy_busy_ms", ms(dm.copy_busy));
        field("exposed_copy_ms", ms(dm.exposed_copy));
        field("host_peak_memory", dm.host_peak_memory);
      }
      if (dp) {
        field("dp_busy_ms", ms(dm.dp_busy));
        field("exposed_dp_ms", ms(dm.exposed_dp));
      }
      field("comm_wait_ms", ms(dm.comm_wait), false);
      b += '}';
    }
    b += "]}";
  }

  // A process "run" listed first, whose one slice spans the run and carries the summary.
  void write_summary_track() {
    write_metadata(summary_pid(), "run", "parameters and metrics", -1);
    std::string& b = event();
    b += "{\"name\":\"run\",\"cat\":\"summary\",\"ph\":\"X\",\"ts\":0,\"dur\":";
    append_ticks_us(b, run_.metrics.makespan);
    b += ",\"pid\":";
    append_int(b, summary_pid());
    b += ",\"tid\":0,\"args\":{";
    write_summary();
    b += "}}";
  }

  void write_metadata(int pid, const std::string& process, const char* thread, int sort_index) {
    const auto meta = [&](const char* name, const char* arg_key) -> std::string& {
      std::string& b = event();
      b += "{\"name\":\"";
      b += name;
      b += "\",\"ph\":\"M\",\"ts\":0,\"pid\":";
      append_int(b, pid);
      b += ",\"tid\":0,\"args\":{\"";
      b += arg_key;
      b += "\":";
      return b;
    };
    std::string& b1 = meta("process_name", "name");
    append_json_string(b1, process);
    b1 += "}}";
    std::string& b2 = meta("process_sort_index", "sort_index");
    append_int(b2, sort_index);
    b2 += "}}";
    std::string& b3 = meta("thread_name", "name");
    append_json_string(b3, thread);
    b3 += "}}";
  }

  // The sender's threads for the messages that take time: "comm" (tid 1), and "comm 2", ...
  // (tid 2, ...) for messages in flight while an earlier one still is, since slices of one
  // thread must not overlap.
  void write_comm_thread_name(int d, int lane) {
    write_thread_name(d, 1 + lane, lane == 0 ? std::string("comm") : "comm " + std::to_string(lane + 1));
  }

  // The copy stream's track (an offload's O and R): the tid after the comm lanes.
  [[nodiscard]] int copy_tid(int d) const { return 1 + comm_lanes_[ix(d)]; }
  // Closes a slice's name and writes the rest of its head: `","cat":CAT,"ph":"X","ts":..,"dur":..,
  // "pid":..,"tid":..,"args":{`; the caller writes the args and closes them.
  void slice_head(std::string& b, std::string_view cat, Ticks start, Ticks end, int device, int tid) {
    b += "\",\"cat\":\"";
    b += cat;
    b += "\",\"ph\":\"X\",\"ts\":";
    append_ticks_us(b, start);
    b += ",\"dur\":";
    append_ticks_us(b, end - start);
    b += ",\"pid\":";
    append_int(b, pid_of(device));
    b += ",\"tid\":";
    append_int(b, tid);
    b += ",\"args\":{";
  }

  // `O F3`: the offload of F3's activation; `R B3`: the reload B3 needs.
  void write_copy(std::uint32_t k, int device) {
    const CopyEvent& c = tl_.copies[k];
    const bool o = c.kind == CopyKind::O;
    std::string& b = event();
    b += o ? "{\"name\":\"O " : "{\"name\":\"R ";
    append_part_name(b, o ? Kind::F : Kind::B, c.stage, c.microbatch);
    slice_head(b, o ? "O" : "R", c.start, c.end, device, copy_tid(device));
    b += "\"stage\":";
    append_int(b, c.stage);
    b += ",\"chunk\":";
    append_int(b, topo_.chunk_of(c.stage));
    append_unit_args(b, "", c.microbatch);
    b += ",\"M_B\":";
    append_json_number(b, c.units);
    b += ",\"bytes\":";
    append_json_number(b, std::round(c.bytes));
    b += ",\"issue_us\":";
    append_ticks_us(b, c.issue);
    if (!o) {
      b += ",\"exposed_us\":";
      append_ticks_us(b, c.exposed);
    }
    b += "}}";
  }

  void write_thread_name(int d, int tid, const std::string& name) {
    std::string& b = event();
    b += "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":";
    append_int(b, pid_of(d));
    b += ",\"tid\":";
    append_int(b, tid);
    b += ",\"args\":{\"name\":";
    append_json_string(b, name);
    b += "}}";
  }

  // The recomputed forward a run starts with (part of its slice on the compute track), drawn
  // again on a track of its own: the compute track's slices do not nest.
  [[nodiscard]] Ticks recompute_of(const TaskRun& r) const {
    return std::min(run_.costs.recompute_part(r.task), r.end - r.start);
  }
  [[nodiscard]] bool recomputes(int d) const {
    for (const TaskRun& r : tl_.device_runs(d))
      if (recompute_of(r) > 0) return true;
    return false;
  }
  // After the device's comm lanes and its copy track.
  [[nodiscard]] int recompute_tid(int d) const {
    return copy_tid(d) + (copies_[ix(d)].empty() ? 0 : 1);
  }

  // After the recompute track (when the device has one): the data-parallel stream's collectives.
  [[nodiscard]] int dp_tid(int d) const { return recompute_tid(d) + (has_recompute_[ix(d)] ? 1 : 0); }

  // `all-reduce 3`: the gradients of stage 3 over the replicas; `all-gather 3` its parameters.
  void write_collective(std::uint32_t k, int device) {
    const CollectiveEvent& c = tl_.collectives[k];
    std::string& b = event();
    b += "{\"name\":\"";
    b += collective_name(c.kind);
    b += ' ';
    append_int(b, c.stage);
    slice_head(b, "dp", c.start, c.end, device, dp_tid(device));
    b += "\"stage\":";
    append_int(b, c.stage);
    b += ",\"chunk\":";
    append_int(b, topo_.chunk_of(c.stage));
    b += ",\"bytes\":";
    append_json_number(b, std::round(c.bytes));
    b += ",\"replicas\":";
    append_int(b, run_.data_parallel.replicas);
    b += ",\"issue_us\":";
    append_ticks_us(b, c.issue);
    b += "}}";
  }

  // With --overlap: the collectives inside the tasks (CostModel::comm_ops), per device in the
  // order of its runs, on the track of their comm stream (a cell's backward on the second
  // when the device has one per chain).
  void index_subops() {
    subops_.assign(ix(tl_.devices), {});
    subop_tracks_.assign(ix(tl_.devices), 0);
    const bool any = std::any_of(run_.costs.stage.begin(), run_.costs.stage.end(),
                                 [](const StageCosts& c) { return !c.F_ops.empty(); });
    if (!any) return;
    for (int d = 0; d < tl_.devices; ++d)
      for (int r = tl_.device_begin[ix(d)]; r < tl_.device_begin[ix(d) + 1]; ++r) {
        const TaskRun& run = tl_.runs[ix(r)];
        for (const PlacedOp& op : run_.costs.comm_ops(run.task)) {
          const Ticks start = std::min(run.end, add_ticks(run.start, op.start));
          const Ticks end = std::min(run.end, add_ticks(start, op.time));
          if (end <= start) continue;
          const int track = op.stream - 1;
          subops_[ix(d)].push_back({start, end, static_cast<std::uint32_t>(r), op.chain, track});
          subop_tracks_[ix(d)] = std::max(subop_tracks_[ix(d)], track + 1);
        }
      }
  }
  // After the dp track (when the device has one).
  [[nodiscard]] int subop_tid(int d, int track) const {
    return dp_tid(d) + (collectives_[ix(d)].empty() ? 0 : 1) + track;
  }

  // `comm F3`: a collective of F3 (of the F half of a cell), `comm B2` of its backward.
  void write_subop(std::uint32_t k, int device) {
    const SubSlice& o = subops_[ix(device)][k];
    const TaskRun& r = tl_.runs[o.run];
    std::string& b = event();
    b += "{\"name\":\"comm ";
    int half = 0;
    for_each_half(r.task, [&](Kind kind, int stage, int mb) {
      if (half++ == o.chain) append_part_name(b, kind, stage, mb);
    });
    slice_head(b, "collective", o.start, o.end, device, subop_tid(device, o.track));
    b += "\"task\":";
    append_json_string(b, to_string(r.task));
    b += ",\"stream\":";
    append_int(b, o.track + 1);
    b += "}}";
  }

  void write_recompute(const TaskRun& r, int device) {
    std::string& b = event();
    b += "{\"name\":\"recompute ";
    for_each_half(r.task, [&](Kind kind, int stage, int mb) {
      if (kind != Kind::F) append_part_name(b, kind, stage, mb);
    });
    slice_head(b, "recompute", r.start, r.start + recompute_of(r), device, recompute_tid(device));
    b += "\"task\":";
    append_json_string(b, to_string(r.task));
    b += "}}";
  }

  // A message that takes time is a slice on its sender's comm track.
  [[nodiscard]] static bool has_slice(const CommEvent& c) { return c.arrive > c.start; }

  // The devices of a message: those of its producer and of its consumer.
  [[nodiscard]] int sender(const CommEvent& c) const { return tl_.device_of(c.from); }
  [[nodiscard]] int receiver(const CommEvent& c) const { return tl_.device_of(c.to); }

  // Where a flow binds: a point strictly inside the slice, so that no viewer can take the
  // neighbouring slice that ends or starts at the same time.
  static bool has_inner_point(const TaskRun& r) { return r.end - r.start >= 2; }
  static Ticks flow_start_ts(const TaskRun& r) { return has_inner_point(r) ? r.end - 1 : r.end; }
  static Ticks flow_end_ts(const TaskRun& r) { return has_inner_point(r) ? r.start + 1 : r.start; }

  // Per device, the comms it sends and receives (CSR, in comm order).
  void index_comms() {
    const std::size_t P = ix(tl_.devices);
    out_begin_.assign(P + 1, 0);
    in_begin_.assign(P + 1, 0);
    for (const CommEvent& c : tl_.comms) {
      ++out_begin_[ix(sender(c)) + 1];
      ++in_begin_[ix(receiver(c)) + 1];
    }
    for (std::size_t d = 0; d < P; ++d) {
      out_begin_[d + 1] += out_begin_[d];
      in_begin_[d + 1] += in_begin_[d];
    }
    out_list_.resize(tl_.comms.size());
    in_list_.resize(tl_.comms.size());
    std::vector<std::uint32_t> o(out_begin_.begin(), out_begin_.end() - 1);
    std::vector<std::uint32_t> i(in_begin_.begin(), in_begin_.end() - 1);
    for (std::uint32_t c = 0; c < tl_.comms.size(); ++c) {
      out_list_[o[ix(sender(tl_.comms[c]))]++] = c;
      in_list_[i[ix(receiver(tl_.comms[c]))]++] = c;
    }
    // Each sender's messages on its comm lanes: in order of their start, each on the first lane
    // free by then.
    lane_.assign(tl_.comms.size(), 0);
    comm_lanes_.assign(P, 0);
    std::vector<std::uint32_t> mine;
    std::vector<Ticks> lane_end;
    for (std::size_t d = 0; d < P; ++d) {
      mine.clear();
      for (std::uint32_t k = out_begin_[d]; k < out_begin_[d + 1]; ++k)
        if (has_slice(tl_.comms[out_list_[k]])) mine.push_back(out_list_[k]);
      std::sort(mine.begin(), mine.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::pair{tl_.comms[a].start, a} < std::pair{tl_.comms[b].start, b};
      });
      lane_end.clear();
      for (const std::uint32_t c : mine) {
        std::size_t lane = 0;
        while (lane < lane_end.size() && lane_end[lane] > tl_.comms[c].start) ++lane;
        if (lane == lane_end.size()) lane_end.push_back(0);
        lane_end[lane] = tl_.comms[c].arrive;
        lane_[c] = static_cast<int>(lane);
      }
      comm_lanes_[d] = static_cast<int>(lane_end.size());
    }
  }

  void write_device(int d) {
    events_.clear();
    const int rb = tl_.device_begin[ix(d)];
    const int re = tl_.device_begin[ix(d) + 1];
    for (int r = rb; r < re; ++r) {
      events_.push_back(Ev{tl_.runs[ix(r)].start, 2 * std::int64_t{r},
                           static_cast<std::uint32_t>(r), 2, Type::slice});
      if (recompute_of(tl_.runs[ix(r)]) > 0)
        events_.push_back(Ev{tl_.runs[ix(r)].start, 2 * std::int64_t{r},
                             static_cast<std::uint32_t>(r), 3, Type::recompute});
    }
    // A flow start sits 1 ns before its producer's end, inside the producer's slice and not
    // at the next one's start. A producer shorter than 2 ns has no such point: the start is at
    // its end, before a slice starting then (rank 0), unless it has no duration and must
    // itself come first.
    for (std::uint32_t k = out_begin_[ix(d)]; k < out_begin_[ix(d) + 1]; ++k) {
      const std::uint32_t c = out_list_[k];
      const TaskRun& p = tl_.runs[ix(tl_.comms[c].from)];
      const bool first = p.end == p.start || has_inner_point(p);
      events_.push_back(Ev{flow_start_ts(p), 2 * std::int64_t{tl_.comms[c].from} + 1, c,
                           static_cast<std::uint8_t>(first ? 2 : 0), Type::flow_start});
      // The message on the comm track (tid 1): after everything of tid 0 at its start.
      if (has_slice(tl_.comms[c]))
        events_.push_back(Ev{tl_.comms[c].start, std::int64_t{c}, c, 3, Type::message});
    }
    // A flow end binds to the enclosing slice (bp "e"): 1 ns after its consumer's start, or
    // right after the consumer's slice when that is shorter than 2 ns.
    for (std::uint32_t k = in_begin_[ix(d)]; k < in_begin_[ix(d) + 1]; ++k) {
      const std::uint32_t c = in_list_[k];
      const TaskRun& r = tl_.runs[ix(tl_.comms[c].to)];
      events_.push_back(Ev{flow_end_ts(r), 2 * std::int64_t{tl_.comms[c].to} + 1, c, 2,
                           Type::flow_end});
    }
    const auto& series = memory_[ix(d)];
    for (std::size_t k = 0; k < series.size(); ++k) {
      events_.push_back(Ev{series[k].time, static_cast<std::int64_t>(k),
                           static_cast<std::uint32_t>(k), 1, Type::counter});
    }
    for (const std::uint32_t k : copies_[ix(d)])
      events_.push_back(Ev{tl_.copies[k].start, std::int64_t{k}, k, 3, Type::copy});
    for (const std::uint32_t k : collectives_[ix(d)])
      events_.push_back(Ev{tl_.collectives[k].start, std::int64_t{k}, k, 3, Type::collective});
    for (std::uint32_t k = 0; k < subops_[ix(d)].size(); ++k)
      events_.push_back(Ev{subops_[ix(d)][k].start, std::int64_t{k}, k, 3, Type::subop});
    if (!host_memory_.empty()) {
      const auto& host = host_memory_[ix(d)];
      for (std::size_t k = 0; k < host.size(); ++k)
        events_.push_back(Ev{host[k].time, static_cast<std::int64_t>(k),
                             static_cast<std::uint32_t>(k), 1, Type::host});
    }
    std::sort(events_.begin(), events_.end(),
              [](const Ev& a, const Ev& b) { return before(a, b); });
    for (const Ev& e : events_) {
      switch (e.type) {
      case Type::slice: write_slice(tl_.runs[e.idx], d); break;
      case Type::flow_start: write_flow(e.idx, true); break;
      case Type::flow_end: write_flow(e.idx, false); break;
      case Type::counter: write_counter(d, series[e.idx], "activation memory"); break;
      case Type::message: write_message(e.idx, d); break;
      case Type::copy: write_copy(e.idx, d); break;
      case Type::host: write_counter(d, host_memory_[ix(d)][e.idx], "host memory"); break;
      case Type::recompute: write_recompute(tl_.runs[e.idx], d); break;
      case Type::collective: write_collective(e.idx, d); break;
      case Type::subop: write_subop(e.idx, d); break;
      }
      sink_.maybe_flush();
    }
  }

  // `F3`, `F3.c1` with chunks, `F3.s1` for slice 1 of micro-batch 3 (`unit` is the task's
  // micro-batch field: mb * slices + slice).
  void append_part_name(std::string& b, Kind kind, int stage, int unit) const {
    b += kind_name(kind);
    append_int(b, unit / slices_);
    if (multi_chunk_) {
      b += ".c";
      append_int(b, topo_.chunk_of(stage));
    }
    if (slices_ > 1) {
      b += ".s";
      append_int(b, unit % slices_);
    }
  }

  // `"microbatch":3` and, when sliced, `,"slice":1`.
  void append_unit_args(std::string& b, const char* prefix, int unit) const {
    b += ",\"";
    b += prefix;
    b += "microbatch\":";
    append_int(b, unit / slices_);
    if (slices_ > 1) {
      b += ",\"";
      b += prefix;
      b += "slice\":";
      append_int(b, unit % slices_);
    }
  }

  void write_slice(const TaskRun& r, int device) {
    const Task& t = r.task;
    std::string& b = event();
    b += "{\"name\":\"";
    bool first = true;
    for_each_half(t, [&](Kind kind, int stage, int mb) {
      if (!first) b += '+';
      first = false;
      append_part_name(b, kind, stage, mb);
    });
    slice_head(b, kind_name(t.kind), r.start, r.end, device, 0);
    b += "\"task\":";
    append_json_string(b, to_string(t));
    b += ",\"stage\":";
    append_int(b, t.stage);
    b += ",\"chunk\":";
    append_int(b, topo_.chunk_of(t.stage));
    append_unit_args(b, "", t.microbatch);
    b += ",\"kind\":\"";
    b += kind_name(t.kind);
    b += '"';
    if (t.kind == Kind::FB) {
      b += ",\"backward_kind\":\"";
      b += kind_name(t.kind2);
      b += "\",\"backward_stage\":";
      append_int(b, t.stage2);
      b += ",\"backward_chunk\":";
      append_int(b, topo_.chunk_of(t.stage2));
      append_unit_args(b, "backward_", t.microbatch2);
    }
    if (const Ticks rc = recompute_of(r); rc > 0) {
      b += ",\"recompute_us\":";
      append_ticks_us(b, rc);
    }
    b += "}}";
  }

  void append_flow_name(std::string& b, std::uint32_t c) const {
    const CommEvent& comm = tl_.comms[c];
    append_part_name(b, comm.part.kind, comm.part.stage, comm.part.microbatch);
    b += " -> stage ";
    append_int(b, comm.to_stage);
  }

  void write_flow(std::uint32_t c, bool start) {
    const CommEvent& comm = tl_.comms[c];
    std::string& b = event();
    b += "{\"name\":\"";
    append_flow_name(b, c);
    b += start ? "\",\"cat\":\"comm\",\"ph\":\"s\",\"id\":"
               : "\",\"cat\":\"comm\",\"ph\":\"f\",\"bp\":\"e\",\"id\":";
    append_int(b, c);
    b += ",\"ts\":";
    const TaskRun& r = tl_.runs[ix(start ? comm.from : comm.to)];
    append_ticks_us(b, start ? flow_start_ts(r) : flow_end_ts(r));
    b += ",\"pid\":";
    append_int(b, pid_of(start ? sender(comm) : receiver(comm)));
    b += ",\"tid\":0}";
  }

  void write_message(std::uint32_t c, int device) {
    const CommEvent& comm = tl_.comms[c];
    std::string& b = event();
    b += "{\"name\":\"";
    append_flow_name(b, c);
    slice_head(b, "comm", comm.start, comm.arrive, device, 1 + lane_[c]);
    b += "\"to_device\":";
    append_int(b, receiver(comm));
    b += ",\"bytes\":";
    append_json_number(b, comm.bytes);
    if (comm.start > comm.send) {
      b += ",\"queued_us\":";
      append_ticks_us(b, comm.start - comm.send);
    }
    b += "}}";
  }

  // A memory counter ("activation memory", "host memory") in M_B, and one in bytes when they
  // are known.
  void write_counter(int d, const MemoryPoint& p, const char* name) {
    std::string& b = event();
    b += "{\"name\":\"";
    b += name;
    b += "\",\"ph\":\"C\",\"ts\":";
    append_ticks_us(b, p.time);
    b += ",\"pid\":";
    append_int(b, pid_of(d));
    b += ",\"args\":{\"M_B\":";
    append_json_number(b, p.value);
    b += "}}";
    // NOTE: a separate counter, not a second series of the first: the trace viewer stacks the
    // series of one counter, and bytes would flatten M_B.
    if (run_.costs.memory_unit_bytes > 0) {
      std::string& b2 = event();
      b2 += "{\"name\":\"";
      b2 += name;
      b2 += " (bytes)\",\"ph\":\"C\",\"ts\":";
      append_ticks_us(b2, p.time);
      b2 += ",\"pid\":";
      append_int(b2, pid_of(d));
      b2 += ",\"args\":{\"bytes\":";
      append_json_number(b2, std::round(p.value * run_.costs.memory_unit_bytes));
      b2 += "}}";
    }
  }

  Sink sink_;
  const Run& run_;
  const Timeline& tl_;
  Topology topo_;
  bool multi_chunk_;
  int slices_;  // sequence slices per micro-batch: a unit is mb * slices_ + slice
  bool first_event_{true};
  std::vector<std::uint32_t> out_begin_, in_begin_, out_list_, in_list_;
  std::vector<int> lane_;        // per message with a slice: its comm lane (tid 1 + lane)
  std::vector<int> comm_lanes_;  // per device: how many comm lanes it uses
  std::vector<std::vector<MemoryPoint>> memory_;
  std::vector<std::vector<MemoryPoint>> host_memory_;  // with an offload
  std::vector<std::vector<std::uint32_t>> copies_;     // per device, its copies' indices
  std::vector<std::vector<std::uint32_t>> collectives_;  // per device, its collectives' indices
  std::vector<bool> has_recompute_;                      // per device: a recompute track
  struct SubSlice {
    Ticks start, end;
    std::uint32_t run;  // its task's run
    int chain;          // 0 a lone task's or a cell's F, 1 a cell's backward
    int track;          // 0 "collectives", 1 "collectives 2"
  };
  std::vector<std::vector<SubSlice>> subops_;  // per device, with --overlap
  std::vector<int> subop_tracks_;              // per device: its collectives tracks
  std::vector<Ev> events_;
};

} // namespace

void write_chrome_trace(std::ostream& out, const Run& run) { TraceWriter(out, run).write(); }

} // namespace ppsim
