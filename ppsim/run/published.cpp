// Published measured runs, read and predicted.
#include "ppsim/run/published.hpp"

#include "ppsim/io/detail/json_reader.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/schedules/registry.hpp"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using nlohmann::json;
using detail::JsonReader;

constexpr int kMaxRuns = 1000;
constexpr int kMaxChunks = 64;
constexpr int kMaxGpus = 1 << 20;
constexpr int kMaxGlobalBatch = 1 << 24;
// NOTE: a run is simulated as one iteration of its pipeline: the micro-batches of one replica
// are bounded like the generators' inputs.
constexpr int kMaxMicrobatches = 100'000;
constexpr long long kMaxTotalStageMicrobatches = 4 * limits::kMaxStageMicrobatches;

PublishedRun read_run(const JsonReader& r, const json& v, const std::string& at) {
  PublishedRun p;
  std::string use;
  const detail::Field measured[] = {
      {"tflops_per_gpu", true, "missing",
       [&](const json& x, const std::string& a) {
         p.measured_tflops = r.number(x, a);
         if (p.measured_tflops <= 0 || p.measured_tflops > 1e7)
           r.fail(a, fmt::format("{}: expected a positive TFLOP/s up to 1e7", p.measured_tflops));
       }},
  };
  const auto boolean = [&r](bool& field) {
    return [&r, &field](const json& x, const std::string& a) {
      if (!x.is_boolean()) r.fail(a, fmt::format("expected true or false, got {}", JsonReader::shown(x)));
      field = x.get<bool>();
    };
  };
  const auto text = [&r](std::string& field) {
    return [&r, &field](const json& x, const std::string& a) { field = r.string(x, a); };
  };
  const auto count = [&r](int& field, int lo, int hi) {
    return [&r, &field, lo, hi](const json& x, const std::string& a) { field = r.integer(x, a, lo, hi); };
  };
  const detail::Field fields[] = {
      {"name", true, "missing", [&](const json& x, const std::string& a) { p.name = r.name(x, a); }},
      {"source", true, "missing (the paper, its table and the hardware)", text(p.source)},
      {"config", false, "", text(p.config)},
      {"use", true, "missing (fit or check)",
       [&](const json& x, const std::string& a) {
         use = r.string(x, a);
         if (use != "fit" && use != "check")
           r.fail(a, fmt::format("'{}': expected fit or check", excerpt(use)));
         p.fit = use == "fit";
       }},
      {"model", true, "missing",
       [&](const json& x, const std::string& a) {
         if (x.is_string()) p.model = load_model(r.string(x, a));
         else p.model = parse_model_json(x.dump(), fmt::format("{}{}", r.where, a));
       }},
      {"device", true, "missing",
       [&](const json& x, const std::string& a) {
         if (x.is_string()) p.device = load_device(r.string(x, a));
         else p.device = parse_device_json(x.dump(), fmt::format("{}{}", r.where, a));
       }},
      {"schedule", true, "missing",
       [&](const json& x, const std::string& a) {
         p.schedule = r.string(x, a);
         if (find_schedule(p.schedule) == nullptr)
           r.fail(a, fmt::format("'{}': not a schedule (ppsim list)", excerpt(p.schedule)));
       }},
      {"chunks", false, "", count(p.chunks, 1, kMaxChunks)},
      {"tp", true, "missing", count(p.tp, 1, 1024)},
      {"pp", true, "missing", count(p.pp, 1, limits::kMaxDevices)},
      {"gpus", true, "missing", count(p.gpus, 1, kMaxGpus)},
      {"global_batch", true, "missing", count(p.global_batch, 1, kMaxGlobalBatch)},
      {"sequence_parallel", false, "", boolean(p.sequence_parallel)},
      {"overlap_grad_reduce", false, "", boolean(p.overlap_grad_reduce)},
      {"measured", true, "missing",
       [&](const json& x, const std::string& a) { detail::read_fields(r, x, a, measured); }},
  };
  detail::read_fields(r, v, at, fields);
  const long long model_parallel = static_cast<long long>(p.tp) * p.pp;
  if (p.gpus % model_parallel != 0)
    r.fail(at + "/gpus", fmt::format("{} GPUs are not a multiple of tp x pp = {}", p.gpus, model_parallel));
  const long long dp = p.gpus / model_parallel;
  const long long per_step = dp * p.model.microbatch_size;
  if (p.global_batch % per_step != 0)
    r.fail(at + "/global_batch",
           fmt::format("{} is not a multiple of the micro-batch size x replicas = {} x {}",
                       p.global_batch, p.model.microbatch_size, dp));
  if (p.microbatches() > kMaxMicrobatches)
    r.fail(at + "/global_batch", fmt::format("{} micro-batches per replica (at most {})",
                                             p.microbatches(), kMaxMicrobatches));
  return p;
}

} // namespace

PublishedRuns parse_published_json(std::string_view text, std::string_view where) {
  const json doc = detail::parse_document(text, where);
  const JsonReader r{where};
  PublishedRuns out;
  out.source = std::string(where);
  const detail::Field fields[] = {
      detail::schema_field(r, "ppsim.published/1"),
      {"source", false, "", [&](const json& v, const std::string& at) { (void)r.string(v, at); }},
      {"flops", true, "missing (narayanan2021 or model)",
       [&](const json& v, const std::string& at) {
         out.flops = r.string(v, at);
         if (out.flops != "narayanan2021" && out.flops != "model")
           r.fail(at, fmt::format("'{}': expected narayanan2021 or model", excerpt(out.flops)));
       }},
      {"runs", true, "missing",
       [&](const json& v, const std::string& at) {
         r.array(v, at);
         if (v.empty() || v.size() > kMaxRuns)
           r.fail(at, fmt::format("{} runs (expected 1..{})", v.size(), kMaxRuns));
         for (std::size_t i = 0; i < v.size(); ++i)
           out.runs.push_back(read_run(r, v[i], fmt::format("{}/{}", at, i)));
       }},
  };
  detail::read_fields(r, doc, "", fields);
  // NOTE: each run is bounded by its generator; all of them together as well, so that a file of
  // a thousand runs at the limit is not hours of work.
  long long work = 0;
  for (const PublishedRun& p : out.runs)
    work += static_cast<long long>(p.pp) * std::max(1, p.chunks) * p.microbatches();
  if (work > kMaxTotalStageMicrobatches)
    r.fail("/runs", fmt::format("{} stage x micro-batch pairs over all runs (at most {})", work,
                                kMaxTotalStageMicrobatches));
  return out;
}

PublishedRuns load_published(const std::string& path) {
  return parse_published_json(read_text_file(path, "published runs"), path);
}

double published_flops(const PublishedRuns& runs, const PublishedRun& run) {
  const ModelSpec& m = run.model;
  const double B = run.global_batch, s = m.seq, l = m.layers, h = m.hidden, V = m.vocab;
  if (runs.flops == "narayanan2021") return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

namespace {

void summarise(ValidationSummary& s, double error) {
  ++s.count;
  s.mean_abs_error += std::abs(error);
  s.max_abs_error = std::max(s.max_abs_error, std::abs(error));
}

} // namespace

Validation validate_published(const PublishedRuns& runs) {
  Validation v;
  for (const PublishedRun& p : runs.runs) {
    ValidationRow row;
    row.run = p;
    row.dp = p.replicas();
    row.microbatches = p.microbatches();
    RunRequest rq;
    rq.schedule = p.schedule;
    rq.devices = p.pp;
    rq.microbatches = row.microbatches;
    rq.chunks = p.chunks;
    WorkloadSpec w;
    w.model = p.model;
    w.device = p.device;
    w.training = TrainingSpec{.dp = row.dp,
                              .zero = 0,
                              .tp = p.tp,
                              .sequence_parallel = p.sequence_parallel,
                              .overlap_grad_reduce = p.overlap_grad_reduce,
                              .ep = 1,
                              .overlap = OverlapMode::none,
                              .comm_streams = 0};
    rq.workload = w;
    const Run run = run_unchecked(rq);
    row.iteration_ms = ticks_to_ms(has_iteration_time(run) ? run.iterations.iteration_time
                                                           : run.metrics.cost);
    row.predicted_tflops = published_flops(runs, p) / (row.iteration_ms * 1e-3) / p.gpus / 1e12;
    row.error = row.predicted_tflops / p.measured_tflops - 1;
    row.bubble_rate = run.metrics.bubble_rate;
    row.peak_gib = run.metrics.peak_bytes / (1024.0 * 1024 * 1024);
    summarise(p.fit ? v.fit : v.check, row.error);
    v.rows.push_back(std::move(row));
  }
  for (ValidationSummary* s : {&v.fit, &v.check})
    if (s->count > 0) s->mean_abs_error /= s->count;
  return v;
}

} // namespace ppsim
