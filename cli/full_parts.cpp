// The parts of the command line that only the full executable links: calibrate, execute and
// serve (oneDNN, Open MPI, the HTTP server) and the calibrations behind --calibrate and
// --device cpu.
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "exec/point_exchange.hpp"
#include "model/calibrate.hpp"
#include "model/cpu_device.hpp"

namespace ppsim {

namespace {

CostSpec calibrated(std::string_view spec, std::vector<std::string>* warnings,
                    Progress* progress) {
  return calibrate::calibrated_costs(spec, warnings, progress);
}

std::unique_ptr<PointExchange> mpi_point_exchange() {
  return std::make_unique<exec::MpiPointExchange>();
}

} // namespace

void link_full_parts() {
  cli::FullParts& parts = cli::full_parts();
  parts.add_calibrate = &cli::add_calibrate_command;
  parts.add_execute = &cli::add_execute_command;
  parts.add_serve = &cli::add_serve_command;
  parts.calibrated_costs = &calibrated;
  parts.measure_cpu_device = &calibrate::measure_cpu_device;
  parts.point_exchange = &mpi_point_exchange;
}

} // namespace ppsim
