// The per-rank runtime: pre-posted receives, non-blocking sends, the task loop, the watchdog,
// timestamps on a barrier-aligned clock, calibration on every rank and the gradient check.
#include "exec/executor.hpp"

#include "exec/plan.hpp"
#include "model/calibrate.hpp"
#include "ppsim/io/launcher_env.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/index.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <fmt/format.h>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace ppsim::exec {

namespace {

int as_int(std::size_t n) { return static_cast<int>(n); }

/// Prints `ppsim: error: execute: rank R: ...` and aborts every rank.
[[noreturn]] void abort_all(int rank, const std::string& what) {
  std::fprintf(stderr, "ppsim: error: execute: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitExecutionFailed);
  std::_Exit(kExitExecutionFailed);
}

/// A thread that ends the process when the main thread waits for another rank too long. It
/// makes no MPI call (the main thread may be inside one): it prints what was awaited and exits;
/// mpirun then stops every other rank.
class Watchdog {
public:
  Watchdog(int rank, double timeout_s) : rank_(rank), timeout_(timeout_s) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Watchdog() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Starts a wait; `describe` is called only if the wait times out.
  void begin(std::function<std::string()> describe) {
    const std::lock_guard lock(mutex_);
    describe_ = std::move(describe);
    since_ = Clock::now();
    waiting_ = true;
  }
  void end() {
    const std::lock_guard lock(mutex_);
    waiting_ = false;
  }

private:
  using Clock = std::chrono::steady_clock;
  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      if (!waiting_) continue;
      const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
      if (waited < timeout_) continue;
      std::fprintf(stderr,
                   "ppsim: error: execute: rank %d: waited %.1f s for %s; another rank died or "
                   "hung, or the schedule cannot progress; aborting every rank (watchdog "
                   "--watchdog %g s)\n",
                   rank_, waited, describe_().c_str(), timeout_);
      std::fflush(stderr);
      std::_Exit(kExitExecutionFailed);
    }
  }

  int rank_;
  double timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_{false};
  bool waiting_{false};
  Clock::time_point since_{};
  std::function<std::string()> describe_;
  std::thread thread_;
};

/// Half the median round trip of `count` floats between ranks 0 and 1 (0 with one rank).
double measure_comm_ms(int rank, int size, std::size_t count) {
  if (size < 2) return 0;
  count = std::max<std::size_t>(count, 1);
  std::vector<float> buf(count, 1.0f);
  constexpr int kWarm = 3, kRounds = 21, kTag = 1;
  std::vector<double> rtt;
  for (int r = 0; r < kWarm + kRounds; ++r) {
    const double t = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf.data(), as_int(count), MPI_FLOAT, 1, kTag, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), as_int(count), MPI_FLOAT, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf.data(), as_int(count), MPI_FLOAT, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), as_int(count), MPI_FLOAT, 0, kTag, MPI_COMM_WORLD);
    }
    if (r >= kWarm) rtt.push_back(MPI_Wtime() - t);
  }
  std::sort(rtt.begin(), rtt.end());
  double half_ms = rtt[rtt.size() / 2] / 2 * 1e3;
  MPI_Bcast(&half_ms, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return half_ms;
}

/// Calibrates one stage of the executed shape on every rank at once (so the kernels are timed
/// under the same load as the run) and averages the ranks' medians. Rank 0 gets the costs of
/// every virtual stage.
CostSpec calibrate_on_all_ranks(const Schedule& schedule, const ExecOptions& o, double comm_ms,
                                int size) {
  calibrate::CalibrationOptions c;
  c.dim = o.shape.dim;
  c.tokens = o.shape.tokens;
  c.blocks_per_stage = {o.shape.blocks};
  c.threads = o.threads;
  c.comm_ms = comm_ms;
  // Time the kernels over as many activation sets as the busiest stage holds, cycling through
  // them as the pipeline does, so caches are as cold as in the run.
  for (const DevicePlan& d : make_plan(schedule).devices)
    for (int n : d.slots) c.slots = std::max(c.slots, n);
  const auto result = calibrate::run_calibration(c);
  CostSpec spec = calibrate::to_cost_spec(result);
  const StageCosts& s = spec.stages.front();
  double local[4] = {static_cast<double>(s.F), static_cast<double>(s.B),
                     static_cast<double>(s.W), static_cast<double>(s.BW)};
  double sum[4] = {0, 0, 0, 0};
  MPI_Allreduce(local, sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  StageCosts avg = s;
  const auto mean = [&](int k) { return static_cast<Ticks>(std::llround(sum[k] / size)); };
  avg.F = mean(0);
  avg.B = mean(1);
  avg.W = mean(2);
  avg.BW = mean(3);
  // One entry per virtual stage: the calibrated stage already is one chunk, not divided again.
  spec.stages.assign(ix(schedule.stages()), avg);
  spec.source = fmt::format(
      "calibrated on {} rank{} at once: dim={},tokens={},blocks={},threads={},slots={}", size,
      size == 1 ? "" : "s", o.shape.dim, o.shape.tokens, o.shape.blocks, o.threads, c.slots);
  return spec;
}

/// One rank's state for the whole run.
class Rank {
public:
  Rank(const Schedule& schedule, const ExecOptions& o, int rank, Watchdog& dog)
      : s_(schedule), topo_(schedule), o_(o), rank_(rank), dog_(dog), plan_(make_plan(schedule)),
        me_(plan_.devices[ix(rank)]), order_(schedule.order[ix(rank)]),
        count_(ix(o.shape.tokens) * ix(o.shape.dim)) {
    models_.resize(ix(s_.stages()));
    const bool seed_bug = o.fault && o.fault->what == Fault::What::seed_bug && o.fault->rank == rank;
    for (int st = 0; st < s_.stages(); ++st)
      if (me_.slots[ix(st)] > 0)
        models_[ix(st)] = std::make_unique<StageModel>(o.shape, stage_seed(o.seed, st),
                                                       me_.slots[ix(st)], seed_bug);
    inputs_.resize(ix(s_.microbatches));
    labels_.resize(ix(s_.microbatches));
    for (int mb = 0; mb < s_.microbatches; ++mb) {
      const auto& route = s_.routes[ix(topo_.route_of(mb))];
      if (topo_.device_of(route.front()) == rank_) inputs_[ix(mb)] = microbatch_input(o.seed, mb, o.shape);
      if (topo_.device_of(route.back()) == rank_) labels_[ix(mb)] = microbatch_label(o.seed, mb, o.shape);
    }
    incoming_of_.assign(parts_size(s_.stages(), s_.microbatches), -1);
    for (std::size_t k = 0; k < me_.incoming.size(); ++k)
      incoming_of_[part_index(me_.incoming[k].part, s_.stages())] = as_int(k);
  }

  /// One iteration; returns [start, end] per task then the arrival of each incoming message,
  /// in seconds since the barrier.
  std::vector<double> iterate(int iteration) {
    for (auto& m : models_)
      if (m) m->zero_weight_grads();
    recv_.assign(me_.incoming.size(), Incoming{});
    for (std::size_t k = 0; k < me_.incoming.size(); ++k) {
      const Message& m = me_.incoming[k];
      recv_[k].data.resize(count_);
      MPI_Irecv(recv_[k].data.data(), as_int(count_), MPI_FLOAT, m.from,
                message_tag(m.part, s_.stages()), MPI_COMM_WORLD, &recv_[k].request);
    }
    sent_.clear();
    local_.clear();
    dog_.begin([iteration] { return fmt::format("the barrier that starts iteration {}", iteration); });
    MPI_Barrier(MPI_COMM_WORLD);
    dog_.end();
    const double t0 = MPI_Wtime();
    std::vector<double> times(2 * order_.size() + me_.incoming.size(), 0.0);
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (o_.fault && o_.fault->what != Fault::What::seed_bug && o_.fault->rank == rank_ &&
          iteration == 0 && i == order_.size() / 2)
        inject(*o_.fault);
      for (const Message& m : me_.tasks[i].receives) {
        if (m.from == rank_) continue;
        const int k = incoming_of_[part_index(m.part, s_.stages())];
        Incoming& in = recv_[ix(k)];
        dog_.begin([&, i] {
          return fmt::format("{} from rank {}, needed by task {} (#{} of {} on rank {})",
                             part_text(m.part), m.from, to_string(order_[i]), i, order_.size(),
                             rank_);
        });
        MPI_Wait(&in.request, MPI_STATUS_IGNORE);
        dog_.end();
        times[2 * order_.size() + ix(k)] = MPI_Wtime() - t0;
      }
      times[2 * i] = MPI_Wtime() - t0;
      const std::size_t posted = sent_.size();
      run_task(order_[i], i);
      times[2 * i + 1] = MPI_Wtime() - t0;
      // The seed's isend + req.wait(): the stream waits for this task's messages.
      if (o_.comm_mode == CommMode::Blocking)
        for (std::size_t k = posted; k < sent_.size(); ++k) wait_sent(sent_[k]);
    }
    for (auto& out : sent_) wait_sent(out);
    return times;
  }

  /// Sends this rank's weight gradients to rank 0; on rank 0, checks them all.
  void check_gradients(ExecResult& result) {
    const int S = s_.stages();
    if (rank_ != 0) {
      for (int st = 0; st < S; ++st) {
        if (!models_[ix(st)]) continue;
        const auto g = models_[ix(st)]->weight_grads();
        MPI_Send(g.data(), as_int(g.size()), MPI_FLOAT, 0, st, MPI_COMM_WORLD);
      }
      return;
    }
    const auto reference = reference_gradients(s_, o_.shape, o_.seed);
    result.gradients_ok = true;
    for (int st = 0; st < S; ++st) {
      const int owner = topo_.device_of(st);
      std::vector<float> g;
      if (owner == 0) {
        g = models_[ix(st)]->weight_grads();
      } else {
        g.resize(reference[ix(st)].size());
        dog_.begin([st, owner] {
          return fmt::format("the weight gradients of stage {} from rank {}", st, owner);
        });
        MPI_Recv(g.data(), as_int(g.size()), MPI_FLOAT, owner, st, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        dog_.end();
      }
      const double diff = relative_difference(g, reference[ix(st)]);
      result.gradients.push_back(StageGradientCheck{st, owner, diff});
      if (!(diff <= result.gradient_tolerance)) result.gradients_ok = false;
    }
  }

  [[nodiscard]] const ExecPlan& plan() const { return plan_; }

private:
  struct Incoming {
    std::vector<float> data;
    MPI_Request request{MPI_REQUEST_NULL};
  };
  struct Outgoing {
    Message message;
    std::vector<float> data;
    MPI_Request request{MPI_REQUEST_NULL};
  };

  void wait_sent(Outgoing& out) {
    if (out.request == MPI_REQUEST_NULL) return;
    dog_.begin([&] {
      return fmt::format("the delivery of {} to rank {}", part_text(out.message.part),
                         out.message.to);
    });
    MPI_Wait(&out.request, MPI_STATUS_IGNORE);
    dog_.end();
  }

  [[noreturn]] void inject(const Fault& f) {
    if (f.what == Fault::What::die) {
      std::fprintf(stderr, "ppsim: execute: rank %d: dying on purpose (--fault die:%d)\n", rank_,
                   rank_);
      std::fflush(stderr);
      std::raise(SIGKILL);
    }
    std::fprintf(stderr, "ppsim: execute: rank %d: hanging on purpose (--fault hang:%d)\n", rank_,
                 rank_);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::hours(1));
    std::_Exit(kExitExecutionFailed);
  }

  /// The data of a message produced on this rank or received from another.
  std::vector<float> take(const Part& p) {
    const auto key = part_index(p, s_.stages());
    const int k = incoming_of_[key];
    if (k >= 0) return std::move(recv_[ix(k)].data);
    const auto it = local_.find(key);
    if (it == local_.end())
      abort_all(rank_, fmt::format("internal error: {} was neither received nor produced here",
                                   part_text(p)));
    std::vector<float> data = std::move(it->second);
    local_.erase(it);
    return data;
  }

  StageModel& model(int stage) { return *models_[ix(stage)]; }

  /// Runs one simple task; returns the input gradient a BW produced (its slot is gone after).
  std::vector<float> run_half(Kind kind, int stage, int mb) {
    const auto& route = s_.routes[ix(topo_.route_of(mb))];
    const auto output_grad = [&] {
      const int next = topo_.next_stage(mb, stage);
      if (next < 0) return mse_grad(model(stage).output(mb), labels_[ix(mb)]);
      return take(Part{Kind::B, next, mb});
    };
    switch (kind) {
    case Kind::F: {
      if (stage == route.front()) model(stage).forward(mb, inputs_[ix(mb)]);
      else model(stage).forward(mb, take(Part{Kind::F, topo_.prev_stage(mb, stage), mb}));
      break;
    }
    case Kind::B: model(stage).backward_input(mb, output_grad()); break;
    case Kind::W: model(stage).backward_weight(mb); break;
    case Kind::BW: return model(stage).backward_fused(mb, output_grad());
    case Kind::FB: break;
    }
    return {};
  }

  void run_task(const Task& t, std::size_t i) {
    std::vector<float> fused_dx;
    if (t.kind == Kind::FB) {
      run_half(Kind::F, t.stage, t.microbatch);
      fused_dx = run_half(t.kind2, t.stage2, t.microbatch2);
    } else {
      fused_dx = run_half(t.kind, t.stage, t.microbatch);
    }
    for (const Message& m : me_.tasks[i].sends) {
      std::vector<float> data;
      if (m.part.kind == Kind::F) data = model(m.part.stage).output(m.part.microbatch);
      else if (!fused_dx.empty()) data = fused_dx;
      else data = model(m.part.stage).input_grad(m.part.microbatch);
      if (m.to == rank_) {
        local_[part_index(m.part, s_.stages())] = std::move(data);
        continue;
      }
      sent_.push_back(Outgoing{m, std::move(data), MPI_REQUEST_NULL});
      Outgoing& out = sent_.back();
      MPI_Isend(out.data.data(), as_int(out.data.size()), MPI_FLOAT, m.to,
                message_tag(m.part, s_.stages()), MPI_COMM_WORLD, &out.request);
    }
  }

  const Schedule& s_;
  Topology topo_;
  const ExecOptions& o_;
  int rank_;
  Watchdog& dog_;
  ExecPlan plan_;
  const DevicePlan& me_;
  const std::vector<Task>& order_;
  std::size_t count_;
  std::vector<std::unique_ptr<StageModel>> models_;
  std::vector<std::vector<float>> inputs_, labels_;
  std::vector<int> incoming_of_;
  std::vector<Incoming> recv_;
  std::deque<Outgoing> sent_;  // a deque: the buffers of pending sends never move
  std::unordered_map<std::size_t, std::vector<float>> local_;
};

/// The measured timeline of one iteration from every rank's times (rank-major, as gathered);
/// every message carries `message_bytes`.
Timeline build_timeline(const Schedule& schedule, const ExecPlan& plan,
                        const std::vector<std::vector<double>>& times, double message_bytes) {
  Timeline tl;
  tl.devices = schedule.devices;
  tl.device_begin.push_back(0);
  std::vector<std::vector<int>> run_of(ix(schedule.devices));
  for (int d = 0; d < schedule.devices; ++d) {
    const auto& order = schedule.order[ix(d)];
    for (std::size_t i = 0; i < order.size(); ++i) {
      run_of[ix(d)].push_back(as_int(tl.runs.size()));
      tl.runs.push_back(TaskRun{order[i], seconds_to_ticks(times[ix(d)][2 * i]),
                                seconds_to_ticks(times[ix(d)][2 * i + 1])});
    }
    tl.device_begin.push_back(as_int(tl.runs.size()));
  }
  // Producer run of each part, then one comm per cross-device message.
  std::vector<int> producer(parts_size(schedule.stages(), schedule.microbatches), -1);
  for (std::size_t r = 0; r < tl.runs.size(); ++r)
    for_each_product(tl.runs[r].task,
                     [&](const Part& p) { producer[part_index(p, schedule.stages())] = as_int(r); });
  for (int d = 0; d < schedule.devices; ++d) {
    const DevicePlan& dev = plan.devices[ix(d)];
    const std::size_t n = schedule.order[ix(d)].size();
    std::vector<double> arrival(parts_size(schedule.stages(), schedule.microbatches), 0.0);
    for (std::size_t k = 0; k < dev.incoming.size(); ++k)
      arrival[part_index(dev.incoming[k].part, schedule.stages())] = times[ix(d)][2 * n + k];
    for (std::size_t i = 0; i < n; ++i)
      for (const Message& m : dev.tasks[i].receives) {
        if (m.from == d) continue;
        const int from = producer[part_index(m.part, schedule.stages())];
        const Ticks send = tl.runs[ix(from)].end;
        const Ticks arrive = std::max(send, seconds_to_ticks(arrival[part_index(m.part, schedule.stages())]));
        tl.comms.push_back(CommEvent{from, run_of[ix(d)][i], send, send, arrive, message_bytes,
                                     m.part, m.to_stage});
      }
  }
  return tl;
}

} // namespace

Fault parse_fault(const std::string& text) {
  const auto colon = text.find(':');
  const std::string what = text.substr(0, colon);
  Fault f;
  const auto bad = [&] {
    return ConfigError(
        fmt::format("--fault '{}': expected die:RANK, hang:RANK or seed-bug:RANK", text));
  };
  if (what == "die") f.what = Fault::What::die;
  else if (what == "hang") f.what = Fault::What::hang;
  else if (what == "seed-bug") f.what = Fault::What::seed_bug;
  else throw bad();
  if (colon == std::string::npos) throw bad();
  try {
    f.rank = static_cast<int>(
        parse_integer(std::string_view(text).substr(colon + 1), "rank", 0, limits::kMaxDevices));
  } catch (const ConfigError&) {
    throw ConfigError(fmt::format("--fault '{}': RANK must be an integer >= 0", text));
  }
  return f;
}

bool under_mpi_launcher() { return launcher_rank().has_value(); }

MpiSession::MpiSession() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

ExecResult execute(const Schedule& schedule, const ExecOptions& o) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ExecResult result;
  result.threads = o.threads;
  try {
    Watchdog dog(rank, o.watchdog_s);
    const calibrate::ScopedGemmThreads threads(o.threads);
    const std::size_t count = ix(o.shape.tokens) * ix(o.shape.dim);

    // Who runs where, for the report.
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    std::vector<char> names(rank == 0 ? ix(size) * MPI_MAX_PROCESSOR_NAME : 0);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; ++r)
      result.hosts.emplace_back(names.data() + ix(r) * MPI_MAX_PROCESSOR_NAME);

    result.comm_ms = measure_comm_ms(rank, size, count);
    // The link: latency from a one-float ping-pong, bandwidth from the activation's.
    const double latency_ms = measure_comm_ms(rank, size, 1);
    const double bytes = static_cast<double>(count * sizeof(float));
    result.message_bytes = bytes;
    result.comm_mode = o.comm_mode;
    result.link.sized = true;
    result.link.latency = ms_to_ticks(std::min(latency_ms, result.comm_ms), "measured latency");
    const double transfer_ns = (result.comm_ms - latency_ms) * 1e6;
    result.link.bandwidth = transfer_ns > 0 ? bytes / transfer_ns : 0;  // GB/s = bytes per ns
    if (o.costs) result.costs = *o.costs;
    else result.costs = calibrate_on_all_ranks(schedule, o, result.comm_ms, size);

    Rank me(schedule, o, rank, dog);
    for (int it = 0; it < std::max(1, o.iterations); ++it) {
      const std::vector<double> times = me.iterate(it);
      // Gather every rank's times on rank 0.
      const int n = as_int(times.size());
      std::vector<int> counts(ix(size)), displs(ix(size));
      MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      std::vector<double> all;
      if (rank == 0) {
        int total = 0;
        for (int r = 0; r < size; ++r) {
          displs[ix(r)] = total;
          total += counts[ix(r)];
        }
        all.resize(ix(total));
      }
      MPI_Gatherv(times.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                  MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        std::vector<std::vector<double>> per_rank(ix(size));
        for (int r = 0; r < size; ++r)
          per_rank[ix(r)].assign(all.begin() + displs[ix(r)],
                                 all.begin() + displs[ix(r)] + counts[ix(r)]);
        result.iterations.push_back(build_timeline(schedule, me.plan(), per_rank,
                                                   static_cast<double>(count * sizeof(float))));
      }
    }
    me.check_gradients(result);
    MPI_Barrier(MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    abort_all(rank, e.what());
  }
  return result;
}

} // namespace ppsim::exec
