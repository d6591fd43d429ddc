/** \file
 * The subcommands of the `collsched` executable. Each lives in its own `cmd_<name>.cpp` and
 * registers itself on the CLI11 app; its callback stores the process exit code in the context
 * (0 holds/done, 1 property violated, 2 bad input or usage, 3 timeout or unknown). Bad input is
 * thrown as InputError and turned into exit code 2 by main().
 */
#pragma once

#include <CLI/CLI.hpp>

#include "cli/context.hpp"

namespace collsched::tools {

void add_demo_command(CLI::App&, Context&);
void add_topo_command(CLI::App&, Context&);
void add_verify_command(CLI::App&, Context&);
void add_simulate_command(CLI::App&, Context&);
void add_convert_command(CLI::App&, Context&);
void add_mpirun_command(CLI::App&, Context&);
void add_compile_command(CLI::App&, Context&);
void add_optimize_command(CLI::App&, Context&);
void add_probe_command(CLI::App&, Context&);
void add_pareto_command(CLI::App&, Context&);
void add_bandwidth_command(CLI::App&, Context&);
void add_reproduce_command(CLI::App&, Context&);
void add_bench_command(CLI::App&, Context&);
void add_completion_command(CLI::App&, Context&);
void add_compare_command(CLI::App&, Context&);
void add_machine_command(CLI::App&, Context&);
void add_compose_command(CLI::App&, Context&);
void add_calibrate_command(CLI::App&, Context&);
void add_tune_command(CLI::App&, Context&);
void add_deploy_command(CLI::App&, Context&);

}  // namespace collsched::tools
