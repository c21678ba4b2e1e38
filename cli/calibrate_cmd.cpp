// `ppsim calibrate` (real GEMMs → a ppsim.costs/1 file) and the --calibrate option of simulate
// and compare.
//
//   ppsim calibrate --dim 1024 --tokens 1024 --blocks 2 --stages 4 -o data/costs/mine.json
//   ppsim compare -s 1f1b,zb-h1 -p 4 -m 8 --calibrate dim=1024,tokens=1024,blocks=2
#include "cli/commands.hpp"
#include "model/calibrate.hpp"
#include "model/cpu_device.hpp"
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/text_parse.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>

namespace ppsim::cli {

namespace {

struct CalibrateOptions {
  std::string dim, tokens, blocks, blocks_per_stage, stages, threads{"1"}, repeats{"0"};
  std::string dtype{"f32"}, comm, output, device_file;
  bool json{false};
};

int parse_int(const std::string& text, std::string_view option) {
  return static_cast<int>(parse_integer(text, option, std::numeric_limits<int>::min(),
                                        std::numeric_limits<int>::max()));
}

calibrate::CalibrationOptions to_options(const CalibrateOptions& o) {
  calibrate::CalibrationOptions c;
  c.dim = parse_int(o.dim, "--dim");
  c.tokens = parse_int(o.tokens, "--tokens");
  if (!o.blocks.empty() && !o.blocks_per_stage.empty())
    throw ConfigError("--blocks and --blocks-per-stage: give one of them");
  const std::string& list = o.blocks.empty() ? o.blocks_per_stage : o.blocks;
  const std::string_view which = o.blocks.empty() ? "--blocks-per-stage" : "--blocks";
  for (const auto& item : split_list(list, which)) c.blocks_per_stage.push_back(parse_int(item, which));
  if (!o.stages.empty()) {
    const int stages = static_cast<int>(parse_integer(o.stages, "--stages", 1, limits::kMaxDevices));
    if (c.blocks_per_stage.size() == 1)
      c.blocks_per_stage.assign(static_cast<std::size_t>(stages), c.blocks_per_stage.front());
    else if (c.blocks_per_stage.size() != static_cast<std::size_t>(stages))
      throw ConfigError(fmt::format("{} {} lists {} stages but --stages is {}", which, list,
                                    c.blocks_per_stage.size(), stages));
  }
  c.threads = parse_int(o.threads, "--threads");
  c.repeats = parse_int(o.repeats, "--repeats");
  c.dtype = o.dtype;
  if (!o.comm.empty()) c.comm_ms = parse_non_negative(o.comm, "--comm");
  calibrate::validate_options(c);
  return c;
}

} // namespace


void add_calibrate_command(CLI::App& app, Io io, Action& action) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand(
      "calibrate", "time the zero-bubble MLP's F, B and W with real oneDNN GEMMs on this CPU and "
                   "write a cost file (ppsim.costs/1)");
  cmd->add_option("--dim", o->dim, "model width D (blocks are Linear(D, 4D), Linear(4D, D))")
      ->type_name("INT")
      ->required();
  cmd->add_option("--tokens", o->tokens, "rows of a micro-batch (micro-batch size x sequence length)")
      ->type_name("INT")
      ->required();
  auto* blocks = cmd->add_option_group("blocks", "give exactly one of");
  blocks->add_option("--blocks", o->blocks,
                     "MLP blocks per stage, or a list with one count per stage (3,2,2,3)")
      ->type_name("N|LIST");
  blocks->add_option("--blocks-per-stage", o->blocks_per_stage,
                     "one block count per stage, e.g. 3,2,2,3")
      ->type_name("LIST");
  blocks->require_option(1);
  cmd->add_option("--stages", o->stages, "pipeline stages (repeats a single --blocks count)")
      ->type_name("INT");
  cmd->add_option("--threads", o->threads, "GEMM threads (default 1: one core per device)")
      ->type_name("INT");
  cmd->add_option("--repeats", o->repeats,
                  "timed runs per kind (default 0: about 1 s of timing, then more rounds while "
                  "the timings are noisy, see below)")
      ->type_name("INT");
  cmd->add_option("--dtype", o->dtype, "f32 (default) or bf16 (needs AVX-512 BF16 or AMX)")
      ->type_name("f32|bf16");
  cmd->add_option("--comm", o->comm,
                  "per-edge comm in ms, instead of the memcpy estimate of this machine")
      ->type_name("MS");
  cmd->add_option("-o,--output", o->output, "write the cost file (atomically; - for stdout)")
      ->type_name("FILE");
  cmd->add_option("--device-file", o->device_file,
                  "also measure this CPU as a device (ppsim.device/1: GEMM efficiency by size over "
                  "square GEMMs of 32 to 2048, F/B/W on the MLP's shapes, memory bandwidth, a "
                  "kernel's cost) and write it to this file, for --device FILE with --model")
      ->type_name("FILE");
  cmd->add_flag("--json", o->json, "print the cost file to stdout instead of the summary");
  const calibrate::RepeatRule rule;
  cmd->footer(fmt::format(
      "Noisy timings: a kind (F, B, W, BW) is noisy when its interquartile range exceeds {:.0f}% "
      "of its median (judged from {} samples or more). With automatic repeats, calibrate then "
      "times more rounds (half as many again, at least 5) until the median of every noisy kind "
      "moves by at most {:.0f}% over a round, or {:.0f} s of timing or {} samples per stage size "
      "are reached. A kind still noisy at the end is a warning on stderr; the cost file records "
      "each kind's noise.",
      100 * rule.noisy_spread, rule.min_judged, 100 * rule.stable_change,
      rule.time_cap_ms / 1000, rule.max_samples));
  cmd->callback([io, &action, o] {
    action = [io, o] {
      if (!o->output.empty()) check_output_path(o->output, "--output");
      if (!o->device_file.empty()) check_output_path(o->device_file, "--device-file");
      const calibrate::CalibrationOptions options = to_options(*o);
      const auto result = calibrate::run_calibration(options, &io.progress);
      io.progress.finish();
      for (const std::string& w : result.warnings)
        io.err << "ppsim: warning: calibrate: " << w << "\n";
      const std::string doc = calibrate::cost_file_json(result);
      if (!o->device_file.empty()) {
        const long long dim = options.dim;
        const DeviceSpec cpu = calibrate::measure_cpu(
            {{{dim, 4 * dim}, {4 * dim, dim}}, options.tokens}, options.threads,
            fmt::format("the MLP of dim {}, {} tokens", options.dim, options.tokens));
        write_file_atomically(o->device_file, [&](std::ostream& f) { f << device_json(cpu); });
        io.err << fmt::format("ppsim: calibrate: wrote {} ({})\n", o->device_file, cpu.source);
      }
      if (o->output == "-") {  // the document alone on stdout
        io.out << doc;
        return 0;
      }
      if (!o->output.empty())
        write_file_atomically(o->output, [&](std::ostream& f) { f << doc; });
      if (o->json) {
        io.out << doc;
      } else {
        io.out << calibrate::calibration_summary(result);
        if (!o->output.empty()) io.out << fmt::format("wrote {}\n", o->output);
      }
      return 0;
    };
  });
}

} // namespace ppsim::cli
