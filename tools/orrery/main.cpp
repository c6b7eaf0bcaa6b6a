// orrery: the command line. Errors in the input are reported once, here, with exit status 2 (ARCHITECTURE.md rule 8).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <malloc.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "models/error.h"
#include "models/utf8.h"
#include "tools/orrery/commands.h"

namespace {

// A report that never reached its reader (standard output on a full disk, say) must not exit 0. Buffered output
// fails only when flushed, so this flushes it before judging.
void check_standard_output() {
  errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || !std::cout || std::ferror(stdout) != 0;
  if (!failed) return;
  const int error = errno;
  throw orrery::Error::io("standard output", error != 0 ? "cannot be written: " + std::error_code(error, std::generic_category()).message()
                                                        : "cannot be written");
}

// glibc returns a freed block above its mmap threshold (128 KiB at first) and the heap's free top to the kernel at
// once, so the search, which builds and frees a graph and an engine per candidate, faulted every page in again: 18%
// of its CPU time was the kernel's (9.6 of 53.7 s, one thread, Llama-3-70B on 1,024 GPUs). Keeping blocks up to
// 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX, glibc's largest mmap threshold on 64-bit, mallopt(3)) in the heap and trimming
// it only past 1 GiB of free top (a round figure well above one candidate's graph and engine) makes that 0.2 s; the
// peak resident size is the same, it is only kept until exit.
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  CLI::App app{"orrery: a discrete-event performance simulator for LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "orrery 0.1.0");
  orrery::cli::add_predict_command(app);
  orrery::cli::add_plan_command(app);
  orrery::cli::add_list_command(app);
  int exit_code = 0;
  orrery::cli::add_validate_command(app, exit_code);
  orrery::cli::add_collective_command(app);
  orrery::cli::add_fit_command(app, exit_code);
  orrery::cli::add_search_command(app);
  orrery::cli::add_calibrate_command(app);
  orrery::cli::add_compare_command(app);
  bool known = argc < 2 || argv[1][0] == '-';
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) known = known || sub->get_name() == argv[1];
  if (!known) {
    std::cerr << "error: unknown command '" << orrery::printable_utf8(argv[1], false) << "'; commands: predict, search, validate, collective, fit, calibrate, compare, list (orrery --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
    check_standard_output();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // CLI11 quotes the value given as it is: printed with its control characters escaped.
    std::ostringstream err;
    app.exit(e, std::cout, err);
    std::cerr << orrery::printable_utf8(err.str());
    return 2;
  } catch (const orrery::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "error: invalid value in the input: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    // CLI11 converts a switch's value (--sequence-parallel=maybe) with std::stoll after parsing, outside its own
    // error types; the simulator's own bad-input errors are orrery::Error.
    std::cerr << "error: a command-line switch takes true, false, 1 or 0 (" << e.what() << ")\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the operating system refused (a loop of symbolic links, no permission) where no reader of ours
    // checked it first: bad input, named with the system's reason.
    std::cerr << "error: " << orrery::printable_utf8(e.path1().string()) << ": " << e.code().message() << "\n";
    return 2;
  } catch (const std::system_error& e) {
    // fmt::print throws this when standard output fails (a full disk); anything else is ours to fix.
    if (std::ferror(stdout) == 0) {
      std::cerr << "internal error (please report): " << e.what() << "\n";
      return 1;
    }
    std::cerr << "error: standard output: cannot be written: " << e.code().message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error (please report): " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}
