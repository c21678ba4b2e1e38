// `ppsim plan`'s documents: the ppsim.plan/1 JSON and the ranked tables.
#include "ppsim/viz/plan.hpp"

#include "ppsim/io/numbers.hpp"
#include "ppsim/sim/time.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ostream>

namespace ppsim {

namespace {

// One candidate as the ppsim.plan/1 document lists it.
nlohmann::ordered_json candidate_json(const PlanCandidate& c, const PlanRequest& rq) {
  nlohmann::ordered_json e;
  e["schedule"] = c.schedule;
  e["chunks"] = c.chunks;
  e["slices"] = c.slices; // balanced (seq1f1b); 1 = none
  e["microbatches"] = c.microbatches;
  e["microbatch_size"] = c.microbatch_size;
  e["layout"] = c.layout;
  // null: the schedule's own memory (default limit, or none)
  e["mem_limit"] = c.mem_limit < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(c.mem_limit);
  e["iteration_time_ms"] = c.iteration_time_ms;
  if (rq.workload.training.dp > 1)
    e["exposed_dp_ms"] = c.exposed_dp_ms;
  // with overlap: the collectives inside the tasks and what of them the compute waited
  // for, summed over the devices
  if (!c.overlap.empty()) {
    e["task_comm_ms"] = c.task_comm_ms;
    e["exposed_comm_ms"] = c.exposed_comm_ms;
  }
  e["cost_ms"] = c.cost_ms;
  e["bubble_rate"] = c.bubble_rate;
  e["peak_bytes"] = c.peak_bytes;
  e["activation_peak_bytes"] = c.activation_peak_bytes;
  // null: the model's own recomputation; else the --recompute text the candidate ran with
  e["recompute"] =
      c.recompute.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.recompute);
  e["offload"] = c.offload.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.offload);
  if (!c.offload.empty()) {
    e["offloaded_bytes"] = c.offloaded_bytes;
    e["exposed_copy_ms"] = c.exposed_copy_ms;
  }
  e["overlap"] = c.overlap.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.overlap);
  if ((!c.recompute.empty() || !c.offload.empty() || !c.overlap.empty()) && c.without_knob_ms > 0)
    e["without_knob_ms"] = c.without_knob_ms;
  e["fits"] = c.fits;
  e["reason"] = c.reason;
  return e;
}

// A plan's candidates as the ppsim.plan/1 document lists them.
nlohmann::ordered_json candidates_json(const Plan& plan, const PlanRequest& rq) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const PlanCandidate& c : plan.candidates)
    all.push_back(candidate_json(c, rq));
  return all;
}

// The plan's document: its request, candidates, winner and why.
nlohmann::ordered_json plan_document(const Plan& plan, const PlanRequest& rq) {
  nlohmann::ordered_json doc;
  doc["schema"] = "ppsim.plan/1";
  doc["model"] = rq.workload.model.name;
  doc["device"] = rq.workload.device.name;
  doc["devices"] = rq.devices;
  doc["global_batch"] = rq.global_batch;
  doc["capacity_bytes"] = plan.capacity_bytes;
  doc["candidates"] = candidates_json(plan, rq);
  doc["best"] = plan.best;
  doc["why"] = plan.why;
  if (!plan.slicing.empty())
    doc["slicing"] = plan.slicing;
  return doc;
}

} // namespace

std::string plan_json(const Plan& plan, const PlanRequest& rq) {
  return plan_document(plan, rq).dump(2);
}

void write_plan_table(std::ostream& out, const Plan& plan, const PlanRequest& rq, int top) {
  out << fmt::format("{} on {} devices ({}), global batch {}, capacity {}: {} candidates\n\n",
                     rq.workload.model.name, rq.devices, rq.workload.device.name, rq.global_batch,
                     human_bytes(plan.capacity_bytes), plan.simulated);
  out << fmt::format("{:>4}  {:<18} {:>2} {:>5} {:>3} {:>12} {:>8} {:>10}  {}\n", "rank",
                     "schedule", "v", "m", "b", "iteration_ms", "bubble", "peak",
                     "layout / why not");
  int shown = 0;
  for (std::size_t i = 0; i < plan.candidates.size() && shown < top; ++i, ++shown) {
    const PlanCandidate& c = plan.candidates[i];
    const std::string name =
        c.slices > 1 ? fmt::format("{} s={}", c.schedule, c.slices) : c.schedule;
    out << fmt::format(
        "{:>4}  {:<18} {:>2} {:>5} {:>3} {:>12} {:>8} {:>10}  {}\n", i + 1, name, c.chunks,
        c.microbatches, c.microbatch_size,
        c.fits || c.iteration_time_ms > 0 ? human_ms(ms_to_ticks(c.iteration_time_ms, "t")) : "-",
        c.fits || c.iteration_time_ms > 0 ? human_percent(c.bubble_rate) : "-",
        c.peak_bytes > 0 ? human_bytes(c.peak_bytes) : "-",
        c.fits ? c.layout + (c.recompute.empty() ? "" : "  --recompute " + c.recompute) +
                     (c.offload.empty() ? "" : "  --offload " + c.offload) +
                     (c.overlap.empty() ? "" : "  --overlap " + c.overlap)
               : c.reason.substr(0, 100));
  }
  if (plan.candidates.size() > static_cast<std::size_t>(shown))
    out << fmt::format("  ... {} more (--top N, or --json for all)\n",
                       plan.candidates.size() - static_cast<std::size_t>(shown));
  out << "\n" << (plan.best >= 0 ? "best: " : "") << plan.why << "\n";
  if (!plan.slicing.empty())
    out << "slicing: " << plan.slicing << "\n";
}

std::string parallel_plan_json(const ParallelPlan& pp, const ParallelRequest& rq) {
  nlohmann::ordered_json doc = plan_document(pp.plan, layout_request(rq.base, pp.plan_shape));
  doc["gpus"] = rq.gpus;
  doc["parallel"] = {{"pp", pp.plan_shape.pp},
                     {"tp", pp.plan_shape.tp},
                     {"dp", pp.plan_shape.dp},
                     {"ep", pp.plan_shape.ep}};
  nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
  for (const ParallelRow& r : pp.rows) {
    nlohmann::ordered_json e;
    e["pp"] = r.shape.pp;
    e["tp"] = r.shape.tp;
    e["dp"] = r.shape.dp;
    e["ep"] = r.shape.ep;
    e["fits"] = r.fits;
    e["candidates"] = r.simulated;
    // the layout's fastest candidate that fits, as its own plan lists it
    if (r.fits)
      e["best"] = candidate_json(r.best, layout_request(rq.base, r.shape));
    e["reason"] = r.reason;
    layouts.push_back(std::move(e));
  }
  doc["layouts"] = std::move(layouts);
  doc["best_layout"] = pp.best;
  doc["layouts_why"] = pp.why;
  return doc.dump(2);
}

void write_parallel_plan_table(std::ostream& out, const ParallelPlan& pp, const ParallelRequest& rq,
                               int top) {
  const bool moe = rq.base.workload.model.moe();
  out << fmt::format("{} on {} devices ({}, {} per node), global batch {}: {} layouts, {} "
                     "candidates\n\n",
                     rq.base.workload.model.name, rq.gpus, rq.base.workload.device.name,
                     rq.base.workload.device.gpus_per_node, rq.base.global_batch, pp.rows.size(),
                     pp.simulated);
  out << fmt::format(
      "{:>4}  {:>4} {:>3} {:>4}{}  {:<18} {:>2} {:>5} {:>3} {:>12} {:>8} {:>10}  {}\n", "rank",
      "pp", "tp", "dp", moe ? fmt::format(" {:>3}", "ep") : "", "schedule", "v", "m", "b",
      "iteration_ms", "bubble", "peak", "why not");
  int shown_rows = 0;
  for (std::size_t i = 0; i < pp.rows.size() && shown_rows < top; ++i, ++shown_rows) {
    const ParallelRow& r = pp.rows[i];
    const std::string ep = moe ? fmt::format(" {:>3}", r.shape.ep) : "";
    if (r.fits)
      out << fmt::format(
          "{:>4}  {:>4} {:>3} {:>4}{}  {:<18} {:>2} {:>5} {:>3} {:>12} {:>8} {:>10}\n", i + 1,
          r.shape.pp, r.shape.tp, r.shape.dp, ep, r.best.schedule, r.best.chunks,
          r.best.microbatches, r.best.microbatch_size,
          human_ms(ms_to_ticks(r.best.iteration_time_ms, "t")), human_percent(r.best.bubble_rate),
          human_bytes(r.best.peak_bytes));
    else
      out << fmt::format("{:>4}  {:>4} {:>3} {:>4}{}  {}\n", i + 1, r.shape.pp, r.shape.tp,
                         r.shape.dp, ep, r.reason.substr(0, 110));
  }
  if (pp.rows.size() > static_cast<std::size_t>(shown_rows))
    out << fmt::format("  ... {} more (--top N, or --json for all)\n",
                       pp.rows.size() - static_cast<std::size_t>(shown_rows));
  out << "\n" << (pp.best >= 0 ? "best layout: " : "") << pp.why << "\n";
  if (pp.plan_shape.pp > 0 && !pp.plan.candidates.empty()) {
    out << fmt::format("\nThe plan of {}:\n",
                       pp.best >= 0 ? "the best layout" : "the first layout that ran");
    write_plan_table(out, pp.plan, layout_request(rq.base, pp.plan_shape), top);
  }
}

} // namespace ppsim
