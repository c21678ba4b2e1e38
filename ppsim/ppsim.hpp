// ppsim's library in one include: schedules by name, costs, the simulator and its metrics,
// schedule and trace files, the request -> run path, and the writers.
//
//   #include <ppsim/ppsim.hpp>
//   const ppsim::Schedule s = ppsim::make_schedule("zb-h1", {.devices = 4, .microbatches = 8});
//   const ppsim::Run r = ppsim::run_schedule(s, ppsim::parse_costs("F=2,B=2,W=2"));
//   // r.metrics.cost == 54 ms; ppsim::metrics_json(r) is its ppsim.metrics/1 document
//
// Each header it names may also be included on its own (`<ppsim/sim/run.hpp>`); what sits
// under a `detail/` folder is private and not installed.
#pragma once

#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/trace_import.hpp"
#include "ppsim/run/compare.hpp"
#include "ppsim/run/measured.hpp"
#include "ppsim/run/plan.hpp"
#include "ppsim/run/request.hpp"
#include "ppsim/run/sweep.hpp"
#include "ppsim/schedules/registry.hpp"
#include "ppsim/schedules/search/bound.hpp"
#include "ppsim/sim/cost_model.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/metrics.hpp"
#include "ppsim/sim/run.hpp"
#include "ppsim/sim/schedule.hpp"
#include "ppsim/sim/simulator.hpp"
#include "ppsim/sim/validate.hpp"
#include "ppsim/viz/chrome_trace.hpp"
#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/metrics_json.hpp"
#include "ppsim/viz/svg.hpp"
