// The `ppsim` Python module: the library's run layer from Python, returning plain Python data.
//
//   import ppsim
//   m = ppsim.simulate("zb-h1", p=4, m=8, costs={"F": 2, "B": 2, "W": 2})
//   m["cost_ms"]                                   # 54.0
//   rows = ppsim.timeline("zb-v", p=4, m=8)        # one dict per task, for pandas / matplotlib
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/comm_text.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/mem_limit_text.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/offload_text.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/slicing_text.hpp"
#include "ppsim/run/measured.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/iterations.hpp"
#include "ppsim/viz/chrome_trace.hpp"
#include "ppsim/viz/detail/documents.hpp"
#include "ppsim/viz/models.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

using namespace ppsim;

// nlohmann's document as Python objects (dicts keep the document's key order).
py::object to_python(const nlohmann::ordered_json& j) {
  switch (j.type()) {
  case nlohmann::ordered_json::value_t::null: return py::none();
  case nlohmann::ordered_json::value_t::boolean: return py::bool_(j.get<bool>());
  case nlohmann::ordered_json::value_t::number_integer: return py::int_(j.get<long long>());
  case nlohmann::ordered_json::value_t::number_unsigned:
    return py::int_(j.get<unsigned long long>());
  case nlohmann::ordered_json::value_t::number_float: return py::float_(j.get<double>());
  case nlohmann::ordered_json::value_t::string: return py::str(j.get<std::string>());
  case nlohmann::ordered_json::value_t::array: {
    py::list out;
    for (const auto& e : j) out.append(to_python(e));
    return out;
  }
  case nlohmann::ordered_json::value_t::object: {
    py::dict out;
    for (const auto& [k, v] : j.items()) out[py::str(k)] = to_python(v);
    return out;
  }
  default: return py::none();
  }
}

// A number or a text for options that take either (`mem_limit=12` or `mem_limit="2p"`).
std::string number_or_text(const py::object& value, std::string_view what) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::bool_>(value))
    throw ConfigError(fmt::format("{}: expected a number or a text, got a bool", what));
  if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value))
    return fmt::format("{}", value.cast<double>());
  throw ConfigError(fmt::format("{}: expected a number or a text", what));
}

// `costs={"F": 2, "B": 2}` or `costs="F=2,B=2"` as the --costs text.
std::string cost_text_of(const py::object& costs) {
  if (py::isinstance<py::str>(costs)) return costs.cast<std::string>();
  if (!py::isinstance<py::dict>(costs))
    throw ConfigError("costs: expected a dict such as {\"F\": 2, \"B\": 2, \"W\": 2} or a text");
  std::string text;
  for (const auto& [key, value] : costs.cast<py::dict>()) {
    const std::string k = py::str(key);
    text += (text.empty() ? "" : ",") + k + "=" +
            number_or_text(py::reinterpret_borrow<py::object>(value), "costs " + k);
  }
  return text;
}

// The costs of `costs` on top of `costs_file`, as --costs on top of --costs-file.
CostSpec costs_of(const py::object& costs, const std::optional<std::string>& costs_file) {
  CostSpec spec;
  if (costs_file) spec = load_cost_file(*costs_file);
  if (costs.is_none()) return spec;
  const std::string text = cost_text_of(costs);
  if (!text.empty()) apply_costs(spec, text);
  return spec;
}

// What every function takes: the shape, the costs, the limit and the iterations.
struct Options {
  std::optional<int> p;
  std::optional<int> m;
  std::optional<int> v;
  py::object costs{py::none()};
  std::optional<std::string> costs_file;
  py::object mem_limit{py::none()};
  int iterations{1};
  double optimizer_step{0};
  std::string sync{"allreduce"};
  std::optional<std::string> model;   ///< a preset or a ppsim.model/1 file, as --model
  std::optional<std::string> device;  ///< with model: a preset or a ppsim.device/1 file
  py::object offload{py::none()};     ///< as --offload: None, 'auto', 0.5, 'stages=0-1,fraction=1'
  std::optional<std::string> recompute;  ///< with model, as --recompute: 'selective', 'auto', ...
  int slices{1};                          ///< as --slices (seq1f1b, seq-zb-h1, interleaved-seq1f1b)
  std::optional<std::string> slicing;     ///< as --slicing: 'even', 'balanced', '3,1'
  /// With model, as --dp, --tp, --zero, --sequence-parallel, --overlap-grad-reduce, --ep,
  /// --overlap and --streams (None: one comm stream per micro-batch).
  int dp{1};
  int tp{1};
  int zero{0};
  bool sequence_parallel{true};
  bool overlap_grad_reduce{false};
  int ep{1};
  std::string overlap{"none"};
  std::optional<int> streams;
};

// The training of `o` on a model: the parallelism and the overlap, as the command line's flags.
TrainingSpec training_of(const Options& o) {
  TrainingSpec t{.dp = o.dp,
                 .zero = o.zero,
                 .tp = o.tp,
                 .sequence_parallel = o.sequence_parallel,
                 .overlap_grad_reduce = o.overlap_grad_reduce,
                 .ep = o.ep,
                 .overlap = OverlapMode::none,
                 .comm_streams = 0};
  if (o.overlap == "a2a") t.overlap = OverlapMode::a2a;
  else if (o.overlap == "full") t.overlap = OverlapMode::full;
  else if (o.overlap != "none")
    throw ConfigError(fmt::format("overlap '{}': expected none, a2a or full", o.overlap));
  if (o.streams) {
    if (*o.streams < 1 || *o.streams > 64)
      throw ConfigError(fmt::format("streams {}: expected 1..64", *o.streams));
    if (t.overlap == OverlapMode::none) throw ConfigError("streams: needs overlap a2a or full");
    t.comm_streams = *o.streams;
  }
  return t;
}

// The model of `o` on its device (h100 unless given), with its training and recomputation, as
// --model, --device, --dp ... --recompute make it.
WorkloadSpec workload_of(const Options& o) {
  WorkloadSpec w;
  w.model = load_model(*o.model);
  w.device = load_device(o.device.value_or("h100"));
  w.training = training_of(o);
  if (o.recompute) apply_recompute(w, parse_recompute(*o.recompute, "recompute"));
  return w;
}

RunRequest request_of(const std::string& schedule, const Options& o) {
  RunRequest rq;
  rq.schedule = schedule;
  rq.devices = o.p;
  rq.microbatches = o.m;
  rq.chunks = o.v.value_or(0);
  if (o.device && !o.model) throw ConfigError("device: needs model");
  if (o.recompute && !o.model) throw ConfigError("recompute: needs model");
  if (!o.model)
    for (const auto& [name, given] :
         {std::pair{"dp", o.dp != 1}, {"tp", o.tp != 1}, {"zero", o.zero != 0},
          {"sequence_parallel", !o.sequence_parallel}, {"overlap_grad_reduce", o.overlap_grad_reduce},
          {"ep", o.ep != 1}, {"overlap", o.overlap != "none"}, {"streams", o.streams.has_value()}})
      if (given) throw ConfigError(fmt::format("{}: needs model", name));
  if (o.model) {
    if (o.costs_file) throw ConfigError("model and costs_file: give one source of costs");
    rq.workload = workload_of(o);
    // As --model with --costs: the model's costs, the given keys on top.
    if (!o.costs.is_none()) rq.cost_overrides = cost_text_of(o.costs);
    rq.mem_capacity_bytes = rq.workload->device.memory_gib * 1073741824.0;
  } else {
    rq.costs = costs_of(o.costs, o.costs_file);
  }
  if (!o.mem_limit.is_none()) rq.mem_limit = parse_mem_limit(number_or_text(o.mem_limit, "mem_limit"));
  rq.iterations.count = o.iterations;
  rq.iterations.optimizer_step = ms_to_ticks(o.optimizer_step, "optimizer_step");
  rq.iterations.sync = parse_sync(o.sync);
  if (!o.offload.is_none()) rq.offload = parse_offload(number_or_text(o.offload, "offload"));
  rq.slices = o.slices;
  if (o.slicing) rq.slicing = parse_slicing(*o.slicing);
  return rq;
}

Run run(const std::string& schedule, const Options& o) {
  const RunRequest rq = request_of(schedule, o);
  // NOTE: generation and simulation touch no Python object, so other Python threads may run.
  py::gil_scoped_release release;
  return run_request(rq);
}

py::object metrics_of(const Run& r) { return to_python(detail::metrics_document(r)); }

py::list timeline_of(const Run& r) {
  const Topology topo(r.schedule);
  py::list rows;
  for (int d = 0; d < r.timeline.devices; ++d)
    for (const TaskRun& t : r.timeline.device_runs(d)) {
      py::dict row;
      row["device"] = d;
      row["task"] = to_string(t.task);
      row["kind"] = std::string(kind_name(t.task.kind));
      row["stage"] = t.task.stage;
      row["chunk"] = topo.chunk_of(t.task.stage);
      // a sliced run's unit is mb * slices + slice (FB cells are never sliced)
      const int slices = r.schedule.slice_count();
      row["microbatch"] = t.task.microbatch / slices;
      if (slices > 1) row["slice"] = t.task.microbatch % slices;
      if (t.task.kind == Kind::FB) {
        row["backward_kind"] = std::string(kind_name(t.task.kind2));
        row["backward_stage"] = t.task.stage2;
        row["backward_chunk"] = topo.chunk_of(t.task.stage2);
        row["backward_microbatch"] = t.task.microbatch2;
      }
      row["start_ms"] = ticks_to_ms(t.start);
      row["end_ms"] = ticks_to_ms(t.end);
      rows.append(std::move(row));
    }
  return rows;
}

// Per device, the actions in PyTorch's text (`0F1`, `2I1`, `0B3` for a fused backward), or
// ppsim's where the format cannot express the schedule (two routes, as in DualPipe).
py::list actions_of(const Schedule& s) {
  py::list devices;
  std::ostringstream csv;
  bool pytorch = true;
  try {
    write_pytorch_csv(csv, s);
  } catch (const ConfigError&) {
    pytorch = false;
  }
  if (pytorch) {
    std::istringstream lines(csv.str());
    std::string line;
    while (std::getline(lines, line)) {
      py::list row;
      std::istringstream cells(line);
      std::string cell;
      while (std::getline(cells, cell, ','))
        if (!cell.empty()) row.append(cell);
      devices.append(std::move(row));
    }
    return devices;
  }
  for (const auto& order : s.order) {
    py::list row;
    for (const Task& t : order) row.append(to_string(t));
    devices.append(std::move(row));
  }
  return devices;
}

// `"1f1b,zb-h1"` or `["1f1b", "zb-h1"]` (a list or a tuple of texts). Another type is a
// TypeError; no name, or an empty one, is a ConfigError (a ValueError), as on the command line.
std::vector<std::string> names_of(const py::object& schedules) {
  std::vector<std::string> out;
  if (py::isinstance<py::str>(schedules)) {
    std::string item;
    std::istringstream in(schedules.cast<std::string>());
    while (std::getline(in, item, ',')) {
      if (item.empty()) throw ConfigError("schedules: empty item in the list");
      out.push_back(item);
    }
  } else if (py::isinstance<py::list>(schedules) || py::isinstance<py::tuple>(schedules)) {
    for (const py::handle item : schedules) {
      if (!py::isinstance<py::str>(item))
        throw py::type_error(fmt::format("schedules: expected names (str), got a {} in the list",
                                         std::string(py::str(item.get_type().attr("__name__")))));
      out.push_back(item.cast<std::string>());
      if (out.back().empty()) throw ConfigError("schedules: empty name in the list");
    }
  } else {
    throw py::type_error(fmt::format("schedules: expected a name, a comma-separated text or a "
                                     "list of names, got {}",
                                     std::string(py::str(schedules.get_type().attr("__name__")))));
  }
  if (out.empty()) throw ConfigError("schedules: no schedule given");
  return out;
}

} // namespace

PYBIND11_MODULE(ppsim, mod) {
  mod.doc() = "ppsim: pipeline-parallel training schedule simulator (the library behind the "
              "ppsim command line)";

  // Errors: the CLI's messages, as subclasses of ppsim.Error and ValueError.
  static py::exception<Error> error(mod, "Error", PyExc_ValueError);
  static py::exception<ConfigError> config_error(mod, "ConfigError", error.ptr());
  static py::exception<ScheduleError> schedule_error(mod, "ScheduleError", error.ptr());
  static py::exception<InfeasibleError> infeasible_error(mod, "InfeasibleError", error.ptr());
  static py::exception<ExecutionError> execution_error(mod, "ExecutionError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    } catch (const ScheduleError& e) {
      PyErr_SetString(schedule_error.ptr(), e.what());
    } catch (const InfeasibleError& e) {
      PyErr_SetString(infeasible_error.ptr(), e.what());
    } catch (const ExecutionError& e) {
      PyErr_SetString(execution_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  mod.def(
      "schedules",
      [] {
        py::list out;
        for (const ScheduleInfo& s : schedule_registry()) {
          py::dict d;
          d["name"] = std::string(s.name);
          py::list aliases;
          for (const auto a : s.aliases) aliases.append(std::string(a));
          d["aliases"] = aliases;
          d["constraint"] = std::string(s.constraint);
          d["description"] = std::string(s.description);
          d["reference"] = std::string(s.reference);
          // The torch.distributed.pipelining class of the same schedule, or None.
          d["pytorch_class"] = s.pytorch_class.empty() ? py::object(py::none())
                                                       : py::object(py::str(std::string(s.pytorch_class)));
          out.append(std::move(d));
        }
        return out;
      },
      "The schedules ppsim generates: name, aliases, constraint, description, reference.");

// The options of simulate, compare and timeline: their keywords (PPSIM_RUN_ARGS), the lambda's
// parameters in the same order (PPSIM_RUN_PARAMS) and the Options they make (PPSIM_RUN_OPTIONS).
#define PPSIM_RUN_ARGS                                                                          \
  py::arg("p") = py::none(), py::arg("m") = py::none(), py::arg("v") = py::none(),            \
  py::arg("costs") = py::none(), py::arg("costs_file") = py::none(),                           \
  py::arg("mem_limit") = py::none(), py::arg("iterations") = 1,                                \
  py::arg("optimizer_step") = 0.0, py::arg("sync") = "allreduce", py::arg("model") = py::none(), \
  py::arg("device") = py::none(), py::arg("offload") = py::none(), py::arg("recompute") = py::none(), \
  py::arg("slices") = 1, py::arg("slicing") = py::none(), py::arg("dp") = 1, py::arg("tp") = 1, \
  py::arg("zero") = 0, py::arg("sequence_parallel") = true,                                    \
  py::arg("overlap_grad_reduce") = false, py::arg("ep") = 1, py::arg("overlap") = "none",      \
  py::arg("streams") = py::none()
#define PPSIM_RUN_PARAMS                                                                        \
  std::optional<int> p, std::optional<int> m, std::optional<int> v, py::object costs,          \
      std::optional<std::string> costs_file, py::object mem_limit, int iterations,             \
      double optimizer_step, std::string sync, std::optional<std::string> model,               \
      std::optional<std::string> device, py::object offload,                                   \
      std::optional<std::string> recompute, int slices, std::optional<std::string> slicing,    \
      int dp, int tp, int zero, bool sequence_parallel, bool overlap_grad_reduce, int ep,      \
      std::string overlap, std::optional<int> streams
#define PPSIM_RUN_OPTIONS                                                                       \
  Options {                                                                                     \
    p, m, v, std::move(costs), std::move(costs_file), std::move(mem_limit), iterations,        \
        optimizer_step, std::move(sync), std::move(model), std::move(device),                  \
        std::move(offload), std::move(recompute), slices, std::move(slicing), dp, tp, zero,    \
        sequence_parallel, overlap_grad_reduce, ep, std::move(overlap), streams                \
  }

  mod.def(
      "simulate",
      [](const std::string& schedule, PPSIM_RUN_PARAMS, std::optional<std::string> trace) {
        const Run r = run(schedule, PPSIM_RUN_OPTIONS);
        if (trace)
          write_file_atomically(*trace, [&](std::ostream& f) { write_chrome_trace(f, r); });
        return metrics_of(r);
      },
      py::arg("schedule"), PPSIM_RUN_ARGS, py::arg("trace") = py::none(),
      "Simulates one schedule (a name or a *.csv / *.json file) and returns its ppsim.metrics/1 "
      "document as a dict, like `ppsim simulate --json`. costs: a dict such as "
      "{'F': 2, 'B': 2, 'W': 2, 'comm': 0.1} (ms per device-stage) or the --costs text; "
      "mem_limit: '2p', a number of M_B, or '3GiB'; offload: as --offload (None, 'auto', 0.5, "
      "'stages=0-1,fraction=1'); recompute: with model, as --recompute ('selective', 'full:2', "
      "'auto', one per stage); slices, slicing: as --slices and --slicing (sequence slices of a "
      "micro-batch, for seq1f1b, seq-zb-h1 and interleaved-seq1f1b); dp, tp, zero, "
      "sequence_parallel, overlap_grad_reduce, ep, overlap ('none', 'a2a', 'full'), streams: with "
      "model, as --dp, --tp, --zero, --sequence-parallel, --overlap-grad-reduce, --ep, --overlap "
      "and --streams; trace: write a Chrome trace to this file.");

  mod.def(
      "compare",
      [](const py::object& schedules, PPSIM_RUN_PARAMS) {
        const Options o = PPSIM_RUN_OPTIONS;
        py::list out;
        for (const std::string& name : names_of(schedules)) out.append(metrics_of(run(name, o)));
        return out;
      },
      py::arg("schedules"), PPSIM_RUN_ARGS,
      "Simulates several schedules on the same model and returns their ppsim.metrics/1 dicts, "
      "like `ppsim compare --json`. schedules: a list of names (or files) or 'a,b,c'.");

  mod.def(
      "timeline",
      [](const std::string& schedule, PPSIM_RUN_PARAMS) {
        return timeline_of(run(schedule, PPSIM_RUN_OPTIONS));
      },
      py::arg("schedule"), PPSIM_RUN_ARGS,
      "One dict per executed task (device, task, kind, stage, chunk, microbatch, start_ms, "
      "end_ms; an FB also has backward_*, a sliced run's task its slice), device by device in execution order: ready for "
      "pandas.DataFrame or a matplotlib broken_barh.");

  mod.def(
      "schedule",
      [](const std::string& schedule, std::optional<int> p, std::optional<int> m,
         std::optional<int> v, py::object costs, std::optional<std::string> costs_file,
         py::object mem_limit, std::optional<std::string> model,
         std::optional<std::string> device, std::string overlap) {
        Options o;
        o.p = p;
        o.m = m;
        o.v = v;
        o.costs = std::move(costs);
        o.costs_file = std::move(costs_file);
        o.mem_limit = std::move(mem_limit);
        o.model = std::move(model);
        o.device = std::move(device);
        o.overlap = std::move(overlap);
        const RunRequest rq = request_of(schedule, o);
        Schedule s;
        {
          py::gil_scoped_release release;
          s = resolve_request(rq).schedule;
        }
        return actions_of(s);
      },
      py::arg("schedule"), py::arg("p") = py::none(), py::arg("m") = py::none(),
      py::arg("v") = py::none(), py::arg("costs") = py::none(),
      py::arg("costs_file") = py::none(), py::arg("mem_limit") = py::none(),
      py::arg("model") = py::none(), py::arg("device") = py::none(), py::arg("overlap") = "none",
      "Per device, the ordered actions in PyTorch's text ('0F1' forward, '2I1' backward for the "
      "input, '0W3' weights, '0B3' full backward, '(0F7;7B3)OVERLAP_F_B'), as "
      "torch.distributed.pipelining writes them; ppsim's text ('0BW3') where the format cannot "
      "express the schedule (DualPipe's two routes). overlap: with model, as --overlap (a2a: the "
      "Combined 1F1B order, its cells as OVERLAP_F_B actions).");

  mod.def(
      "load",
      [](const std::string& path) {
        const Schedule s = load_schedule_file(path);
        py::dict d;
        d["name"] = s.name;
        d["devices"] = s.devices;
        d["stages"] = s.stages();
        d["microbatches"] = s.microbatches;
        d["placement"] = s.stage_device;
        d["routes"] = s.routes;
        d["actions"] = actions_of(s);
        return d;
      },
      py::arg("path"),
      "Reads a schedule file (*.csv in PyTorch's compute-only format, *.json ppsim.schedule/1): "
      "name, devices, stages, microbatches, placement, routes and the actions per device.");
  // Measured runs: `ppsim import` and `ppsim diff` as plain data.
  const auto measured_of = [](const py::object& files, const std::string& format,
                              const std::vector<std::string>& maps, std::optional<int> iteration) {
    ImportOptions o;
    o.format = parse_trace_format(format);
    for (const std::string& m : maps) o.maps.push_back(parse_trace_map(m));
    o.iteration = iteration;
    const std::vector<std::string> paths = names_of(files);
    py::gil_scoped_release release;
    return measured_run(read_traces(paths, o));
  };
  mod.def(
      "import_trace",
      [measured_of](const py::object& files, const std::string& format,
                    const std::vector<std::string>& maps, std::optional<int> iteration,
                    std::optional<std::string> costs_out) {
        const MeasuredRun m = measured_of(files, format, maps, iteration);
        const CostFit fit = fit_costs(m);
        if (costs_out)
          write_file_atomically(*costs_out, [&](std::ostream& f) { f << fitted_costs_json(fit, m); });
        return to_python(detail::import_document(m, fit));
      },
      py::arg("files"), py::arg("format") = "auto", py::arg("maps") = std::vector<std::string>{},
      py::arg("iteration") = py::none(), py::arg("costs_out") = py::none(),
      "Reads a measured run (PyTorch profiler traces, one per rank or merged, .json or .json.gz; "
      "Megatron timer dumps; a ppsim trace) like `ppsim import --json`: 'measured' is its "
      "ppsim.metrics/1 dict, 'fit' the fitted costs; costs_out writes them as a cost file. maps: "
      "['REGEX=KIND', ...] with groups (?<stage>..), (?<mb>..), (?<chunk>..).");
  mod.def(
      "diff",
      [measured_of](const py::object& files, const std::string& format,
                    const std::vector<std::string>& maps, std::optional<int> iteration,
                    py::object costs, std::optional<std::string> costs_file, double straggler) {
        const MeasuredRun m = measured_of(files, format, maps, iteration);
        CostSpec spec = costs_file ? load_cost_file(*costs_file) : fit_costs(m).costs;
        if (!costs.is_none()) {
          const std::string text = cost_text_of(costs);
          if (!text.empty()) apply_costs(spec, text);
        }
        if (!(straggler > 1)) throw ConfigError("straggler: expected a factor above 1");
        DiffOptions o;
        o.straggler_factor = straggler;
        nlohmann::ordered_json doc;
        {
          py::gil_scoped_release release;
          doc = detail::diff_document(diff_measured(m, spec, o));
        }
        return to_python(doc);
      },
      py::arg("files"), py::arg("format") = "auto", py::arg("maps") = std::vector<std::string>{},
      py::arg("iteration") = py::none(), py::arg("costs") = py::none(),
      py::arg("costs_file") = py::none(), py::arg("straggler") = 1.5,
      "Simulates a measured run's order beside it, like `ppsim diff --json`: the measured, "
      "simulated and replayed metrics, the errors, and every idle window with its cause.");

  // Models: `ppsim costs --json` and `ppsim validate-model --json` as plain data.
  mod.def(
      "costs",
      [](const std::string& model, int p, std::optional<std::string> device, std::optional<int> v,
         py::object costs, std::optional<std::string> recompute, int dp, int tp, int zero,
         bool sequence_parallel, bool overlap_grad_reduce, int ep, std::string overlap,
         std::optional<int> streams) {
        Options o;
        o.model = model;
        o.device = std::move(device);
        o.recompute = std::move(recompute);
        o.dp = dp;
        o.tp = tp;
        o.zero = zero;
        o.sequence_parallel = sequence_parallel;
        o.overlap_grad_reduce = overlap_grad_reduce;
        o.ep = ep;
        o.overlap = std::move(overlap);
        o.streams = streams;
        const WorkloadSpec w = workload_of(o);
        if (w.recompute_auto)
          throw ConfigError("recompute: 'auto' depends on the schedule; give the choice, or use "
                            "simulate");
        const int chunks = v.value_or(0);
        const Layout layout = workload_layout(w, p, chunks);
        ModelCosts mc = model_costs(w.model, w.device, layout, p, w.training, w.recompute);
        if (!costs.is_none()) {
          const std::string text = cost_text_of(costs);
          if (!text.empty()) apply_costs(mc.costs, text);
        }
        return to_python(detail::model_costs_document(w, mc, layout, p));
      },
      py::arg("model"), py::arg("p"), py::arg("device") = py::none(), py::arg("v") = py::none(),
      py::arg("costs") = py::none(), py::arg("recompute") = py::none(), py::arg("dp") = 1,
      py::arg("tp") = 1, py::arg("zero") = 0, py::arg("sequence_parallel") = true,
      py::arg("overlap_grad_reduce") = false, py::arg("ep") = 1, py::arg("overlap") = "none",
      py::arg("streams") = py::none(),
      "A model's per-stage costs on p devices, like `ppsim costs --json`: the ppsim.costs/1 dict "
      "(stages with F, B, W in ms, M_B, M_W, params) and its 'model' section, with, on a device "
      "that knows its HBM bandwidth, 'breakdown': per stage where F's, B's, W's and R's time goes "
      "(gemm_ms, attention_ms, memory_ms, tp_comm_ms, ep_comm_ms, overhead_ms) and its "
      "optimizer_ms. device: a preset (h100 unless given) or a ppsim.device/1 file; v: chunks per "
      "device; costs: overrides on top, as --costs; the rest as in simulate.");

  mod.def(
      "validate_model",
      [](std::optional<std::string> file, std::optional<std::string> device) {
        PublishedRuns runs = file ? load_published(*file) : builtin_published_runs();
        if (device) {
          const DeviceSpec d = load_device(*device);
          for (PublishedRun& r : runs.runs) r.device = d;
        }
        nlohmann::ordered_json doc;
        {
          py::gil_scoped_release release;
          doc = detail::validation_document(runs, validate_published(runs));
        }
        return to_python(doc);
      },
      py::arg("file") = py::none(), py::arg("device") = py::none(),
      "Predicts published measured training runs, like `ppsim validate-model --json`: the "
      "ppsim.validation/1 dict, one row per run (measured_tflops, predicted_tflops, error, "
      "bubble_rate, iteration_ms, peak_gib; 'use' is 'fit' or 'check') and the error summaries "
      "of the fitted and held-out runs. file: a ppsim.published/1 file (default: Megatron-LM's "
      "2021 GPT runs on A100, built in); device: simulate every run on this device instead.");

#undef PPSIM_RUN_ARGS
#undef PPSIM_RUN_PARAMS
#undef PPSIM_RUN_OPTIONS
}
