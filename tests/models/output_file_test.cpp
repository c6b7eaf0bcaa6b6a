// Files orrery writes are whole or absent (issue 26): OutputFile writes beside the target and renames only when
// complete; failures throw Error (I/O) naming the path and the system's reason.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/error.h"
#include "models/output_file.h"

using namespace orrery;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "orrery-output-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempFolder() { fs::remove_all(path); }
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST_CASE("an output file replaces its target only when committed", "[models][output]") {
  TempFolder dir;
  const fs::path target = dir.path / "trace.json";
  put(target, "old contents");
  {
    OutputFile out(target.string());
    out.write("new ");
    // While writing, the old file is untouched and the bytes go to a temporary file in the same folder.
    CHECK(read(target) == "old contents");
    CHECK(fs::path(out.writing_to()).parent_path() == dir.path);
    CHECK(fs::exists(out.writing_to()));
    out.write("contents");
    out.commit();
  }
  CHECK(read(target) == "new contents");
  // Only the target is left: the temporary file was renamed.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("an output file given up before its commit leaves the old file and no temporary file", "[models][output]") {
  TempFolder dir;
  const fs::path target = dir.path / "search.json";
  put(target, "old contents");
  try {
    OutputFile out(target.string());
    out.write("half of the new ");
    throw std::runtime_error("the writer failed half way");
  } catch (const std::runtime_error&) {
  }
  CHECK(read(target) == "old contents");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("a replaced file keeps its permissions", "[models][output]") {
  TempFolder dir;
  const fs::path target = dir.path / "profile.json";
  put(target, "{}");
  ::chmod(target.c_str(), 0640);
  write_file_whole(target.string(), "{\"gpu\": \"x\"}\n");
  struct stat st {};
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("writing to a full device is an I/O error naming the path and the reason", "[models][output]") {
  // /dev/full cannot be renamed over: it is written in place, and every write fails with ENOSPC.
  if (!fs::exists("/dev/full")) return;
  try {
    write_file_whole("/dev/full", std::string(1 << 16, 'x'));
    FAIL("writing to /dev/full succeeded");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kIo);
    CHECK_THAT(e.what(), Catch::StartsWith("/dev/full: cannot be written") && Catch::Contains("No space left"));
  }
}

TEST_CASE("output paths are checked before the work: folders and missing folders are refused", "[models][output]") {
  TempFolder dir;
  const auto error_of = [](const std::string& path) -> std::string {
    try {
      check_output_path("--trace", path);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kInvalidInput);  // bad input: exit 2
      return e.what();
    }
    return "";
  };
  CHECK(error_of((dir.path / "new.json").string()).empty());
  CHECK_THAT(error_of(dir.path.string()), Catch::Contains("--trace") && Catch::Contains("is a folder"));
  CHECK_THAT(error_of((dir.path / "missing" / "t.json").string()), Catch::Contains("does not exist"));
  CHECK(error_of("/dev/null").empty());
  // The check leaves nothing behind (its probe file is removed).
  CHECK(fs::is_empty(dir.path));
}
