#include "calibrate/nccl_tests_log.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "models/error.h"
#include "models/text_file.h"

namespace orrery {

namespace {

std::optional<CollectiveKind> kind_from(const std::string& text) {
  std::string t;
  for (char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* a, const char* b) { return t.find(a) != std::string::npos || t.find(b) != std::string::npos; };
  if (has("all_reduce", "allreduce")) return CollectiveKind::kAllReduce;
  if (has("all_gather", "allgather")) return CollectiveKind::kAllGather;
  if (has("reduce_scatter", "reducescatter")) return CollectiveKind::kReduceScatter;
  if (has("alltoall", "all_to_all")) return CollectiveKind::kAllToAll;
  if (has("sendrecv", "send_recv")) return CollectiveKind::kSendRecv;
  return std::nullopt;
}

// Strips launcher prefixes such as "[1,0]<stdout>:" or "0: ".
std::string strip_prefix(const std::string& line) {
  static const std::regex mpi(R"(^\[\d+,\d+\]<std(out|err)>:)");
  static const std::regex slurm(R"(^\s*\d+:\s)");
  std::string s = std::regex_replace(line, mpi, "");
  if (std::regex_search(s, slurm)) {
    // "0:   1048576 ..." from srun --label: drop the label only when a result row follows it.
    std::string rest = std::regex_replace(s, slurm, "", std::regex_constants::format_first_only);
    if (!rest.empty()) s = rest;
  }
  return s;
}

bool parse_double(const std::string& token, double& out) {
  try {
    std::size_t used = 0;
    out = std::stod(token, &used);
    return used == token.size();
  } catch (...) {
    return false;
  }
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& name) {
  NcclTestsLog log;
  log.file = name;
  std::istringstream in(text);
  std::string line;
  std::set<std::string> hosts;
  static const std::regex rank_line(R"(#\s*Rank\s+\d+.*\bon\s+(\S+))");
  static const std::regex gpus_line(R"(nGpus\s+(\d+))");
  std::string header_text;
  while (std::getline(in, line)) {
    line = strip_prefix(line);
    std::smatch m;
    if (std::regex_search(line, m, rank_line)) {
      ++log.ranks;
      hosts.insert(m[1]);
      continue;
    }
    if (line.find('#') != std::string::npos) {
      if (std::regex_search(line, m, gpus_line)) log.gpus_per_process = std::max(1, std::stoi(m[1]));
      header_text += line + "\n";
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string t; fields >> t;) tokens.push_back(t);
    if (tokens.size() < 10) continue;
    double size = 0;
    if (!parse_double(tokens[0], size) || size < 0 || tokens[0].find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    // The last eight columns: out-of-place time, algbw, busbw, #wrong, then the in-place group.
    const std::size_t k = tokens.size() - 8;
    double time_us = 0, busbw = 0;
    if (!parse_double(tokens[k], time_us) || !parse_double(tokens[k + 2], busbw)) continue;
    log.rows.push_back({static_cast<Bytes>(size), from_us(time_us), from_GB_s(busbw)});
  }
  log.nodes = static_cast<int>(hosts.size());
  log.kind = kind_from(name);
  if (!log.kind) log.kind = kind_from(header_text);
  if (log.rows.empty()) throw Error::invalid("nccl-tests log", name, "holds no result rows (size ... time algbw busbw)");
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::filesystem::path& file) {
  return parse_nccl_tests_log(read_text_file(file, "nccl-tests log"), file.filename().string());
}

}  // namespace orrery
