#pragma once
// The subcommands of `orrery`. Each registers itself on the CLI11 app and runs after parsing; the library's
// orrery::Error propagates to main(), which prints it and exits 2.

#include <CLI/CLI.hpp>

namespace orrery::cli {

/// `orrery predict [SCENARIO] [flags]`.
void add_predict_command(CLI::App& app);
/// `orrery list [models|gpus|clusters]`.
void add_list_command(CLI::App& app);

}  // namespace orrery::cli
