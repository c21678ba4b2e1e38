// `ppsim models` (the presets) and `ppsim costs` (what a model on a device costs per stage).
//
//   ppsim models
//   ppsim costs --model zb-6.2b --device h100 -p 8 --json -o costs.json
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "ppsim/io/device_file.hpp"

#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/numbers.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/run/plan.hpp"
#include "ppsim/run/published.hpp"
#include "ppsim/run/transformer.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/models.hpp"
#include "ppsim/viz/plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <ostream>
#include <tuple>

namespace ppsim::cli {

namespace {

struct CostsOptions {
  RunOptions run;
  bool json{false};
  std::string output;
};

// Where each stage's F + B + W of one micro-batch goes, and its optimizer step.
void write_breakdown(std::ostream& out, const ModelCosts& mc) {
  out << fmt::format("\n{:>5}  {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  {:>12}\n",
                     "stage", "gemm_ms", "attn_ms", "memory_ms", "tp_ms", "a2a_ms", "kernel_ms",
                     "memory", "optimizer_ms");
  for (std::size_t i = 0; i < mc.times.size(); ++i) {
    const TimeParts all = mc.times[i].all();
    const auto ms = [](double v) { return human_ms(ms_to_ticks(v, "a part of a stage's time")); };
    out << fmt::format("{:>5}  {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  {:>12}\n", i,
                       ms(all.gemm), ms(all.attention), ms(all.memory), ms(all.tp_comm),
                       ms(all.ep_comm), ms(all.overhead),
                       human_percent(all.total() > 0 ? all.memory / all.total() : 0),
                       ms(mc.optimizer_ms[i]));
  }
  out << "(F + B + W of one micro-batch: weight GEMMs, attention core, memory-bound kernels, "
         "tensor-parallel collectives, expert all-to-alls, kernels' fixed cost; memory: the "
         "memory-bound share)\n";
}

int run_costs(const CostsOptions& o, Io io) {
  const std::optional<WorkloadSpec> w = resolve_workload(o.run);
  if (!w) throw ConfigError("costs: needs --model (a preset or a ppsim.model/1 file)");
  if (!o.run.devices) throw ConfigError("costs: needs -p DEVICES");
  // Checked as every command checks it, although costs only reports: a value that simulate and
  // plan refuse is no more right here.
  if (!o.run.mem_capacity.empty()) (void)parse_bytes(o.run.mem_capacity, "--mem-capacity");
  const int p = *o.run.devices;
  if (w->recompute_auto)
    throw ConfigError("costs: --recompute auto depends on the schedule; give the choice, or use "
                      "simulate or plan");
  const Layout layout = workload_layout(*w, p, o.run.chunks);
  ModelCosts mc = model_costs(w->model, w->device, layout, p, w->training, w->recompute);
  if (!o.run.costs.empty()) apply_costs(mc.costs, o.run.costs);
  io.progress.finish();
  if (o.json || !o.output.empty()) {
    const std::string text = model_costs_json(*w, mc, layout, p);
    if (o.output == "-") {  // the document alone on stdout
      io.out << text;
      return kExitOk;
    }
    if (!o.output.empty()) {
      write_file_atomically(o.output, [&](std::ostream& f) { f << text; });
      if (!o.json)
        io.out << fmt::format("{}: wrote the costs of {} on {} ({} stages)\n", o.output,
                              w->model.name, w->device.name, mc.costs.stages.size());
    }
    if (o.json) io.out << text;
    return kExitOk;
  }
  const ModelSpec& m = w->model;
  const std::string mlp =
      m.moe() ? fmt::format("{} experts of {} (top-{}{}{}){}", m.experts, m.expert_ffn, m.top_k,
                            m.shared_experts > 0 ? fmt::format(", {} shared", m.shared_experts) : "",
                            m.capacity_factor > 0 ? fmt::format(", capacity {:g}", m.capacity_factor) : "",
                            m.dense_layers > 0 ? fmt::format(" after {} dense layers of ffn {}", m.dense_layers, m.ffn) : "")
              : fmt::format("ffn {}", m.ffn);
  const std::string heads =
      m.mla() ? fmt::format(" of {}+{} (MLA: q latent {}, kv latent {}, v {})", m.head_dim,
                            m.qk_rope_head_dim, m.q_lora_rank, m.kv_lora_rank, m.v_head_dim)
      : m.head_dim > 0 ? fmt::format(" of {}", m.head_dim)
                       : "";
  io.out << fmt::format("model     {} ({} parameters; {} layers, hidden {}, {} heads{} ({} KV), {}, "
                        "seq {}, micro-batch {}, vocab {}, {}, recompute {})\n",
                        m.name, human_count(parameter_count(m)), m.layers, m.hidden, m.heads, heads,
                        m.kv_heads, mlp, m.seq, m.microbatch_size, m.vocab, m.dtype,
                        w->recompute.empty() ? std::string(recompute_name(m.recompute))
                                             : recompute_text(w->recompute));
  io.out << fmt::format("device    {} ({})\n", w->device.name, w->device.source);
  io.out << fmt::format("layout    {}\n", layout_text(layout));
  io.out << fmt::format("comm      {} ms per message of {}\n", human_ms(mc.costs.comm),
                        human_bytes(mc.message_bytes));
  io.out << fmt::format("M_B unit  {} (one device-stage of the even split)\n\n",
                        human_bytes(mc.unit_bytes));
  // The recomputed forward's share of B, only when something is recomputed.
  const bool recomputes = std::any_of(mc.costs.stages.begin(), mc.costs.stages.end(),
                                      [](const StageCosts& c) { return c.R > 0; });
  io.out << fmt::format("{:>5}  {:<12} {:>10} {:>10} {:>10} {:>11} {:>11} {:>9} {:>11}{}\n", "stage",
                        "layers", "F_ms", "B_ms", "W_ms", "M_B", "M_W", "params", "state",
                        recomputes ? fmt::format(" {:>10}", "R_ms") : "");
  for (std::size_t i = 0; i < mc.costs.stages.size(); ++i) {
    const StageCosts& c = mc.costs.stages[i];
    io.out << fmt::format("{:>5}  {:<12} {:>10} {:>10} {:>10} {:>11} {:>11} {:>9} {:>11}{}\n", i,
                          layout_text(Layout{{layout.stages[i]}}), human_ms(c.F), human_ms(c.B),
                          human_ms(c.W), human_bytes(c.MB * mc.unit_bytes),
                          human_bytes(c.MW * mc.unit_bytes), human_count(c.params),
                          human_bytes(c.state_bytes),
                          recomputes ? fmt::format(" {:>10}", human_ms(c.R)) : "");
  }
  if (!mc.times.empty()) write_breakdown(io.out, mc);
  return kExitOk;
}

struct PlanOptions {
  RunOptions run;
  int global_batch{0};
  std::string schedules;
  int top{15};
  bool json{false};
  std::string html;
  unsigned threads{0};
  int gpus{0};  ///< --gpus: search pp x tp x dp (x ep) over this many devices
  /// With --gpus: which of -p, --tp, --dp, --ep were given (kept as given, not searched).
  bool fixed_pp{false}, fixed_tp{false}, fixed_dp{false}, fixed_ep{false};
};

// The report of the best few candidates that fit, simulated again with their full timelines.
void write_plan_html(const std::string& path, const Plan& plan, const PlanRequest& rq) {
  std::vector<Run> runs;
  for (std::size_t i = 0; i < plan.candidates.size() && runs.size() < 6; ++i) {
    const PlanCandidate& c = plan.candidates[i];
    if (!c.fits) break;
    runs.push_back(run_request(candidate_request(rq, c)));
  }
  write_file_atomically(path, [&](std::ostream& f) {
    write_html_report(f, runs, {.title = fmt::format("ppsim plan: {} on {} x {}", rq.workload.model.name, rq.devices, rq.workload.device.name)});
  });
}

// `plan --gpus N`: every layout of N devices, each planned whole; the winner's plan in full.
int run_parallel_plan(const PlanOptions& o, PlanRequest base, Io io) {
  ParallelRequest rq;
  rq.gpus = o.gpus;
  if (o.fixed_pp) rq.fixed_pp = o.run.devices.value_or(0);
  if (o.fixed_tp) rq.fixed_tp = o.run.tp;
  if (o.fixed_dp) rq.fixed_dp = o.run.dp;
  if (o.fixed_ep) rq.fixed_ep = o.run.ep;
  for (const auto& [given, v, name] : {std::tuple{o.fixed_pp, rq.fixed_pp, "-p"},
                                       {o.fixed_tp, rq.fixed_tp, "--tp"},
                                       {o.fixed_dp, rq.fixed_dp, "--dp"},
                                       {o.fixed_ep, rq.fixed_ep, "--ep"}})
    if (given && v < 1) throw ConfigError(fmt::format("{} {}: expected at least 1", name, v));
  // A layout per stage names the stages of one pp: searched pp cannot take it.
  if (!o.fixed_pp && (!base.workload.layout.empty() || !base.workload.layers_per_stage.empty() ||
                      base.workload.recompute.size() > 1))
    throw ConfigError("plan --gpus: --layout, --layers-per-stage and a --recompute per stage name "
                      "the stages of one pipeline: give -p with them");
  rq.base = std::move(base);
  std::unique_ptr<PointExchange> exchange;
  rq.base.workers = shared_workers(o.threads, exchange);
  const ParallelPlan pp = make_parallel_plan(rq);
  if (exchange && exchange->rank() != 0) return kExitOk;
  const PlanRequest shown = layout_request(rq.base, pp.plan_shape);
  if (!o.html.empty()) write_plan_html(o.html, pp.plan, shown);
  io.progress.finish();
  if (o.json) {
    io.out << parallel_plan_json(pp, rq) << "\n";
    return pp.best >= 0 ? kExitOk : kExitInfeasible;
  }
  write_parallel_plan_table(io.out, pp, rq, o.top);
  return pp.best >= 0 ? kExitOk : kExitInfeasible;
}

int run_plan(const PlanOptions& o, Io io) {
  std::optional<WorkloadSpec> w = resolve_workload(o.run);
  if (!w) throw ConfigError("plan: needs --model (a preset or a ppsim.model/1 file)");
  PlanRequest rq;
  rq.workload = std::move(*w);
  rq.devices = o.run.devices.value_or(0);
  rq.global_batch = o.global_batch;
  if (!o.schedules.empty()) rq.schedules = split_list(o.schedules, "--schedules");
  if (!o.run.mem_capacity.empty()) rq.mem_capacity_bytes = parse_bytes(o.run.mem_capacity, "--mem-capacity");
  rq.cost_overrides = o.run.costs;
  rq.progress = &io.progress;
  if (o.gpus != 0) return run_parallel_plan(o, std::move(rq), io);
  if (!o.run.devices) throw UsageError("plan: needs -p STAGES, or --gpus N to search pp x tp x dp");
  // Under mpirun the ranks share the candidates and each makes the same plan; rank 0 writes.
  std::unique_ptr<PointExchange> exchange;
  rq.workers = shared_workers(o.threads, exchange);
  const Plan plan = make_plan(rq);
  if (exchange && exchange->rank() != 0) return kExitOk;
  if (!o.html.empty()) write_plan_html(o.html, plan, rq);
  io.progress.finish();
  if (o.json) {
    io.out << plan_json(plan, rq) << "\n";
    return plan.best >= 0 ? kExitOk : kExitInfeasible;
  }
  write_plan_table(io.out, plan, rq, o.top);
  return plan.best >= 0 ? kExitOk : kExitInfeasible;
}

struct ValidateOptions {
  std::string file;
  std::string device;
  bool json{false};
  std::string fail_above;
};

int run_validate_model(const ValidateOptions& o, Io io) {
  PublishedRuns runs = o.file.empty() ? builtin_published_runs() : load_published(o.file);
  double fail_above = -1;
  if (!o.fail_above.empty())
    fail_above = parse_non_negative(o.fail_above, "--fail-above") / 100;
  if (!o.device.empty()) {
    const DeviceSpec device = load_device(o.device);
    for (PublishedRun& r : runs.runs) r.device = device;
  }
  const Validation v = validate_published(runs);
  io.progress.finish();
  const auto failed = [&] {
    if (fail_above < 0) return false;
    return std::any_of(v.rows.begin(), v.rows.end(), [&](const ValidationRow& r) {
      return !r.run.fit && std::abs(r.error) > fail_above;
    });
  }();
  const int code = failed ? kExitRegression : kExitOk;
  if (o.json) {
    io.out << validation_json(runs, v) << "\n";
    return code;
  }
  io.out << fmt::format("{}\n\n", runs.source);
  io.out << fmt::format("{:<12} {:<5} {:<16} {:>3} {:>3} {:>4} {:>4} {:>9} {:>9} {:>7} {:>7} {:>11} {:>8}\n",
                        "run", "use", "schedule", "tp", "pp", "dp", "m", "measured", "predicted",
                        "error", "bubble", "iteration_s", "peak");
  for (const ValidationRow& r : v.rows) {
    const std::string schedule =
        r.run.chunks > 1 ? fmt::format("{} v={}", r.run.schedule, r.run.chunks) : r.run.schedule;
    io.out << fmt::format("{:<12} {:<5} {:<16} {:>3} {:>3} {:>4} {:>4} {:>9.1f} {:>9.1f} {:>+6.1f}% {:>7} {:>11.3f} {:>8}\n",
                          r.run.name, r.run.fit ? "fit" : "check", schedule, r.run.tp, r.run.pp,
                          r.dp, r.microbatches, r.run.measured_tflops, r.predicted_tflops,
                          100 * r.error, human_percent(r.bubble_rate), r.iteration_ms / 1e3,
                          human_bytes(r.peak_gib * 1024 * 1024 * 1024));
  }
  io.out << "\nTFLOP/s per GPU by the paper's FLOP count over the predicted iteration time.\n";
  for (const auto& [name, s] : {std::pair{"fit", &v.fit}, {"check", &v.check}})
    if (s->count > 0)
      io.out << fmt::format("{:<5} ({} runs): mean |error| {:.1f} %, max {:.1f} %\n", name,
                            s->count, 100 * s->mean_abs_error, 100 * s->max_abs_error);
  if (failed)
    io.out << fmt::format("a held-out run is off by more than {} %\n", o.fail_above);
  return code;
}

} // namespace

void add_model_commands(CLI::App& app, Io io, Action& action) {
  // models
  auto json = std::make_shared<bool>(false);
  auto* models = app.add_subcommand("models", "list the model presets with their parameter counts");
  models->add_flag("--json", *json, "print as JSON");
  models->callback([io, &action, json] {
    action = [io, json] {
      if (*json) {
        io.out << models_json(model_presets()) << "\n";
        return kExitOk;
      }
      io.out << fmt::format("{:<17} {:>8} {:>7} {:>7} {:>6} {:>5} {:>7} {:>6} {:>3} {:>7}  {}\n",
                            "model", "params", "layers", "hidden", "heads", "kv", "ffn", "seq", "b",
                            "vocab", "mlp");
      for (const ModelSpec& m : model_presets()) {
        const std::string mlp =
            m.moe() ? fmt::format("{}, {} experts, top-{} ({} active){}", mlp_name(m.mlp), m.experts,
                                  m.top_k, human_count(active_parameter_count(m)),
                                  m.mla() ? ", MLA" : "")
                    : std::string(mlp_name(m.mlp));
        io.out << fmt::format("{:<17} {:>8} {:>7} {:>7} {:>6} {:>5} {:>7} {:>6} {:>3} {:>7}  {}\n",
                              m.name, human_count(parameter_count(m)), m.layers, m.hidden, m.heads,
                              m.kv_heads, m.moe() ? m.expert_ffn : m.ffn, m.seq, m.microbatch_size,
                              m.vocab, mlp);
      }
      std::string devices;
      for (const DeviceSpec& d : device_presets()) devices += d.name + ", ";
      io.out << "\nDevices: " << devices.substr(0, devices.size() - 2)
             << " (presets), cpu (measured here), or a ppsim.device/1 file.\n";
      return kExitOk;
    };
  });

  // costs
  auto co = std::make_shared<CostsOptions>();
  auto* costs = app.add_subcommand(
      "costs", "per-stage F/B/W times, activation memory and parameters of a model on a device");
  costs->add_option("-p,--stages", co->run.devices, "pipeline devices (ranks)")->required();
  add_chunks_option(*costs, co->run.chunks,
                    "stages per device: the layout lists devices x chunks stages");
  costs->add_option("--costs", co->run.costs, "overrides on top: F=..,B=..,W=..,comm=.. (ms)");
  add_model_options(*costs, co->run);
  costs->get_option("--model")->required();
  costs->add_flag("--json", co->json, "print the ppsim.costs/1 document (--costs-file reads it)");
  costs->add_option("-o,--output", co->output, "write the ppsim.costs/1 document to FILE");
  costs->callback([io, &action, co] { action = [io, co] { return run_costs(*co, io); }; });

  // validate-model
  auto vo = std::make_shared<ValidateOptions>();
  auto* validate = app.add_subcommand(
      "validate-model",
      "predict published measured training runs (ppsim.published/1; default: Megatron-LM's "
      "GPT runs of 2021 on A100) and compare: TFLOP/s per GPU, error, bubble, memory");
  validate->add_option("file", vo->file, "a ppsim.published/1 file (default: the built-in table)");
  validate->add_option("--device", vo->device,
                       "simulate every run on this device (a preset or a ppsim.device/1 file) "
                       "instead of its own: try fitted constants");
  validate->add_flag("--json", vo->json, "print the ppsim.validation/1 document");
  validate->add_option("--fail-above", vo->fail_above,
                       "exit 1 when a held-out run's |error| is above PERCENT");
  validate->callback([io, &action, vo] { action = [io, vo] { return run_validate_model(*vo, io); }; });

  // plan
  auto po = std::make_shared<PlanOptions>();
  auto* plan = app.add_subcommand(
      "plan", "the best schedule, chunks, micro-batch size and layout for a model on a device");
  plan->add_option("-p,--stages", po->run.devices,
                   "pipeline devices (ranks); with --gpus, pp kept as given");
  plan->add_option("--gpus", po->gpus,
                   "devices in all: search pp x tp x dp (x ep for a mixture of experts) with "
                   "pp tp dp = N, tp within a node; -p, --tp, --dp, --ep given are kept");
  plan->add_option("--global-batch", po->global_batch,
                   "sequences per iteration over all data-parallel replicas")
      ->required();
  plan->add_option("--schedules", po->schedules,
                   "schedules to consider, comma-separated (default: all)");
  plan->add_option("--costs", po->run.costs, "overrides on top: F=..,B=..,W=..,comm=.. (ms)");
  add_model_options(*plan, po->run);
  plan->get_option("--model")->required();
  plan->add_option("--top", po->top, "rows to print (default 15)");
  plan->add_flag("--json", po->json, "print the ppsim.plan/1 document");
  plan->add_option("--html", po->html, "write a report of the best candidates to FILE");
  add_threads_option(*plan, po->threads, "candidates");
  plan->callback([io, &action, po, plan] {
    po->fixed_pp = plan->count("-p") > 0;
    po->fixed_tp = plan->count("--tp") > 0;
    po->fixed_dp = plan->count("--dp") > 0;
    po->fixed_ep = plan->count("--ep") > 0;
    action = [io, po] { return run_plan(*po, io); };
  });
}

} // namespace ppsim::cli
