// Bad input gives an error that names the file or field, the value and the rule, never a crash, a hang, a NaN or
// a silent success (issue 26). Each case below reproduces an input that once did one of those.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hardware/cluster_spec.h"
#include "models/json_fields.h"
#include "models/text_file.h"
#include "models/utf8.h"
#include "sim/instances.h"
#include "sim/rank_layout.h"
#include "test_support.h"

using namespace orrery;
using nlohmann::json;

namespace {

std::string parse_error(const std::string& text, const std::string& what = "scenario s.json") {
  try {
    parse_json_text(text, what);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// `depth` objects nested under the key "a", innermost {}.
std::string nested_objects(int depth) {
  std::string text;
  for (int i = 1; i < depth; ++i) text += "{\"a\": ";
  text += "{}";
  text += std::string(static_cast<std::size_t>(depth - 1), '}');
  return text;
}

}  // namespace

TEST_CASE("JSON nested deeper than 64 levels is refused while parsing, naming the file, the depth and the byte",
          "[models][json][errors]") {
  // 64 levels parse (limits::kJsonDepth); the 65th is refused where it opens: byte 6 x 64 of {"a": {"a": ...
  CHECK(parse_error(nested_objects(64)).empty());
  CHECK(parse_error(nested_objects(65)) ==
        "scenario s.json (depth 65 at byte 384, in a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
        "a.a.a.a.a...) is nested deeper than 64 levels of objects and arrays, the most an input may use (no real "
        "input needs 10)");
  // A cluster override 100,000 levels deep once overflowed the stack in the preset merge; now the parse refuses it.
  const std::string deep = R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "gpu": )" +
                           std::string(100000, '[') + std::string(100000, ']') + "}}";
  CHECK_THAT(parse_error(deep), Catch::Contains("scenario s.json (depth 65 at byte 126, in cluster.gpu[0][0]") &&
                                    Catch::Contains("is nested deeper than 64 levels"));
}

TEST_CASE("an array of 300,000 objects parses whole, and a repeated key is still found among them",
          "[models][json]") {
  // The duplicate-key check once rescanned the array at every object's end: quadratic, 15 s of CPU here.
  std::string empty = "[";
  std::string small = "[";
  for (int i = 0; i < 300000; ++i) {
    empty += i ? ",{}" : "{}";
    if (i) small += ",";
    small += "{\"i\": ";
    small += std::to_string(i);
    small += ", \"s\": \"x\"}";
  }
  empty += "]";
  small += "]";
  const json a = parse_json_text(empty, "empty.json");
  REQUIRE(a.size() == 300000);
  CHECK(a[299999] == json::object());
  const json b = parse_json_text(small, "small.json");
  REQUIRE(b.size() == 300000);
  CHECK(b[123456] == json({{"i", 123456}, {"s", "x"}}));
  // A key given twice inside the last object of the long array: named with its path.
  small.insert(small.size() - 2, ", \"i\": 7");
  CHECK(parse_error(small, "small.json") ==
        "small.json ([299999].i) has a key given twice in one object (the JSON would keep only the last)");
  // Nested objects each have their own keys: the same key in two objects is no repetition.
  CHECK(parse_json_text(R"({"a": {"k": 1}, "b": {"k": 2}, "k": 3})", "x") ==
        json({{"a", {{"k", 1}}}, {"b", {{"k", 2}}}, {"k", 3}}));
}

TEST_CASE("text that is not UTF-8 is refused naming the file, the field and the byte offset", "[models][json][errors]") {
  // 0xE9 is Latin-1's e-acute: byte 26 of the text (counting from 0), inside the value of "notes".
  CHECK(parse_error("{\"model\": 1, \"notes\": \"caf\xE9\"}") ==
        "scenario s.json (notes at byte 26: 0xE9) is not valid UTF-8, which JSON text must be (RFC 8259, section 8.1)");
  // Inside a key of a nested object.
  CHECK(parse_error("{\"training\": {\"s\xFFq\": 1}}") ==
        "scenario s.json (a key of training at byte 16: 0xFF) is not valid UTF-8, which JSON text must be (RFC 8259, "
        "section 8.1)");
  // A surrogate written in UTF-8 (0xED 0xA0 0x80) is not UTF-8 either (RFC 3629, section 3).
  CHECK(first_invalid_utf8("ok \xED\xA0\x80") == 3);
  CHECK(first_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80") == std::string_view::npos);
}

TEST_CASE("a NUL character in a key or a string is refused with the file and the rule, not cut short",
          "[models][json][errors]") {
  // The key's own text once was the whole message: what() stopped at the NUL.
  CHECK(parse_error(R"({"model": 1, "no\u0000tes": "x"})") ==
        "scenario s.json (the key \"no\\u0000tes\" of the top level at byte 16) holds a NUL character (\\u0000) in a "
        "key, which no field name has");
  CHECK(parse_error(R"({"model": {"hf_config": "a\u0000b"}})") ==
        "scenario s.json (model.hf_config at byte 26) holds a NUL character (\\u0000) in a string, which no name, "
        "label or file path may hold");
  // An error quoting bytes from outside JSON (a file name, a flag) keeps them printable.
  CHECK(std::string(Error::invalid("--model", std::string("ll\xE9\0x", 5), "is not a model preset").what()) ==
        "--model (ll\\xE9\\u0000x) is not a model preset");
}

TEST_CASE("GPU and cluster numbers beyond physical bounds are refused, naming the field, the value and the bound",
          "[hardware][errors]") {
  const auto gpu_error = [](const std::string& overrides) {
    try {
      parse_gpu(json::parse(R"({"preset": "h100-sxm", )" + overrides + "}"), "cluster.gpu");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Once accepted and predicted with exit 0.
  CHECK(gpu_error(R"("peak_tflops": {"bf16": 1e300})") ==
        "cluster.gpu.peak_tflops.bf16 (1e+300) must lie in [0.1, 150000] TFLOP/s (10x the fastest dense rate of any GPU "
        "today, GB300's 15,000 TFLOP/s of NVFP4)");
  CHECK(gpu_error(R"("hbm_capacity_GiB": 1e10)") ==
        "cluster.gpu.hbm_capacity_GiB (10000000000) must lie in [1, 4096] GiB (over 10x the 288 GB of B300 and "
        "MI355X, the most today)");
  CHECK_THAT(gpu_error(R"("hbm_bandwidth_TB_s": 800)"), Catch::Contains("hbm_bandwidth_TB_s (800) must lie in [0.1, 80] TB/s"));
  CHECK_THAT(gpu_error(R"("nvlink_bandwidth_GB_s": 1e6)"), Catch::Contains("nvlink_bandwidth_GB_s (1000000) must lie in [0, 9000] GB/s"));
  // 0 is a board without NVLink (PCIe only); between 0 and the bound's floor is a typo.
  CHECK_THAT(gpu_error(R"("nvlink_bandwidth_GB_s": 0.5)"), Catch::Contains("must be 0 (no NVLink) or lie in [1, 9000] GB/s"));
  CHECK_THAT(gpu_error(R"("tdp_W": 1e9)"), Catch::Contains("tdp_W (1000000000) must lie in [10, 14000] W"));
  CHECK_THAT(gpu_error(R"("sustained_gemm_clock": {"MHz": 1765, "power_W": 700, "peak_clock_MHz": 1830,
                                                    "max_clock_MHz": 1e7})"),
             Catch::Contains("sustained_gemm_clock.max_clock_MHz (10000000) must lie in [100, 10000] MHz"));
  const auto cluster_error = [](const std::string& overrides) {
    try {
      parse_cluster(json::parse(R"({"preset": "dgx-h100", "num_gpus": 8, )" + overrides + "}"), "cluster");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(cluster_error(R"("nic_bandwidth_Gbit_s": 1e-12)"),
             Catch::Contains("cluster.nic_bandwidth_Gbit_s (1e-12) must lie in [1, 8000] Gbit/s"));
  CHECK_THAT(cluster_error(R"("nic_latency_us": 1e9)"), Catch::Contains("cluster.nic_latency_us (1000000000) must lie in [0.001, 10000] us"));
  CHECK_THAT(cluster_error(R"("host_memory_bandwidth_GB_s": 1e9)"),
             Catch::Contains("cluster.host_memory_bandwidth_GB_s (1000000000) must lie in [1, 10240] GB/s"));
  // Every preset lies inside the bounds.
  for (const PresetSummary& c : cluster_presets()) CHECK_NOTHROW(parse_cluster(json(c.name), "cluster"));
}

TEST_CASE("published figures outside physical bounds are refused, so no comparison divides by 4.9e-324",
          "[sim][validation][errors]") {
  const std::string base = R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 2048, "global_batch_size": 8}, "expect": )";
  CHECK(test::scenario_error(base + R"({"iteration_time_s": 1e308}})") ==
        "expect.iteration_time_s (1e+308) must lie in [1e-06, 1000000] s (between one kernel launch and 11.6 days)");
  CHECK_THAT(test::scenario_error(base + R"({"iteration_time_s": 4.9e-324}})"),
             Catch::Contains("expect.iteration_time_s (5e-324) must lie in [1e-06, 1000000] s"));
  CHECK_THAT(test::scenario_error(base + R"({"tokens_per_s_per_gpu": 1e300}})"),
             Catch::Contains("expect.tokens_per_s_per_gpu (1e+300) must lie in"));
  CHECK_THAT(test::scenario_error(base + R"({"tflops_per_gpu": 4.9e-324}})"), Catch::Contains("expect.tflops_per_gpu (5e-324) must lie in"));
  CHECK_THAT(test::scenario_error(base + R"({"mfu": 1.5}})"), Catch::Contains("expect.mfu (1.5) must lie in [0.0001, 1]"));
  CHECK_THAT(test::scenario_error(base + R"({"peak_memory_gib": 1e300}})"), Catch::Contains("expect.peak_memory_gib (1e+300) must lie in"));
}

TEST_CASE("every rank expanded (--expand-ranks) has its groups told apart by leaders exactly as by member lists", "[sim][symmetry]") {
  // The reference: each rank's groups keyed by their sorted members (in order for the p2p pairs), numbered in
  // order of first appearance, as make_instances did for every rank before the leaders (O(ranks x group size)).
  const auto reference = [](const ParallelPlan& plan) {
    const RankLayout layout(plan);
    std::map<std::pair<int, std::vector<int>>, int> ids;
    std::vector<std::int32_t> group_of, size;
    for (int r = 0; r < layout.num_ranks(); ++r) {
      group_of.push_back(-1);  // kNone
      for (int k = 1; k < kNumGroupKinds; ++k) {
        const auto kind = static_cast<GroupKind>(k);
        std::vector<int> key = layout.group_members(kind, r);
        const bool pair = is_pipeline_transfer(kind);
        if (!pair) {
          std::sort(key.begin(), key.end());
          key.erase(std::unique(key.begin(), key.end()), key.end());
        }
        if (key.empty()) {
          group_of.push_back(-1);
          continue;
        }
        auto [it, fresh] = ids.emplace(std::make_pair(pair && !is_pipeline_send(kind) ? k - 1 : k, key), static_cast<int>(size.size()));
        if (fresh) size.push_back(static_cast<std::int32_t>(pair ? 2 : key.size()));
        group_of.push_back(it->second);
      }
    }
    return std::make_pair(group_of, size);
  };
  struct Case {
    int tp, cp, dp, pp, ep, etp;
    std::vector<int> hierarchical;
  };
  for (const Case& c : {Case{2, 1, 4, 2, 1, 1, {}}, Case{1, 1, 1, 1, 1, 1, {}}, Case{2, 4, 2, 3, 4, 2, {2, 2}},
                        Case{1, 2, 8, 5, 8, 1, {}}, Case{4, 1, 2, 4, 2, 2, {}}}) {
    ParallelPlan plan;
    plan.tp = c.tp, plan.cp = c.cp, plan.dp = c.dp, plan.pp = c.pp, plan.ep = c.ep, plan.etp = c.etp;
    plan.hierarchical_context_parallel_sizes = c.hierarchical;
    const Instantiation fast = make_instances(plan, {}, Expansion::kAllRanks);
    const auto [group_of, size] = reference(plan);
    INFO("tp " << c.tp << " cp " << c.cp << " dp " << c.dp << " pp " << c.pp << " ep " << c.ep << " etp " << c.etp);
    CHECK(fast.instances.size() == static_cast<std::size_t>(c.tp * c.cp * c.dp * c.pp));
    CHECK(fast.group_of == group_of);
    CHECK(fast.group_size == size);
  }
}

TEST_CASE("an expansion of every rank beyond the task-instance limit is refused before any rank is built", "[sim][errors]") {
  // 262,144 GPUs of Llama-3.1-405B: 2 stages of 131,072 ranks each, every rank its stage's program of 16
  // micro-batches. Refused from the task count alone (building the ranks' groups first once took 95 s).
  const Scenario s = test::scenario(R"({"model": "llama3.1-405b", "cluster": {"preset": "dgx-h100", "num_gpus": 262144},
      "parallel": {"tp": 8, "pp": 2, "sequence_parallel": true, "zero_stage": 1},
      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 262144}})");
  PredictOptions expanded;
  expanded.expansion = Expansion::kAllRanks;
  CHECK_THROWS_WITH(predict(s, expanded), Catch::StartsWith("--expand-ranks (262144 ranks) would simulate") &&
                                              Catch::Contains("task instances, above the limit of 2e+09"));
}

TEST_CASE("an input file that cannot be read says why, and an I/O error part-way is not a short file",
          "[models][errors]") {
  const auto read_error = [](const std::filesystem::path& path) {
    try {
      read_text_file(path, "scenario");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A stream reader stops at EIO as at the end of the file; /proc/self/mem fails so from offset 0 (unmapped).
  if (std::filesystem::exists("/proc/self/mem")) {
    CHECK(read_error("/proc/self/mem") == "scenario (/proc/self/mem) cannot be read: Input/output error");
  }
  const std::filesystem::path folder = std::filesystem::temp_directory_path() / "orrery-text-file-test";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const std::filesystem::path loop = folder / "loop.json";
  std::filesystem::create_symlink("loop.json", loop);
  // stat's ELOOP, not "does not exist" as std::filesystem::exists says of it.
  CHECK(read_error(loop) == "scenario (" + loop.string() + ") cannot be read: Too many levels of symbolic links");
  CHECK(read_error(folder) == "scenario (" + folder.string() + ") is not a regular file (it is a folder)");
  CHECK(read_error(folder / "none.json") == "scenario (" + (folder / "none.json").string() + ") does not exist");
  {
    std::ofstream(folder / "a.json") << "{}";
  }
  CHECK(read_text_file(folder / "a.json", "scenario") == "{}");
  std::filesystem::remove_all(folder);
}

TEST_CASE("an error escapes the control characters it quotes and cuts a long quote, noting its length",
          "[models][errors]") {
  // ESC (a terminal's escape sequences), C1's CSI U+009B and a newline in a quoted value are written as escapes; a
  // rule we wrote keeps its line breaks.
  CHECK(std::string(Error::invalid("model", "llama\x1B[31m\xC2\x9B" "1m\nerror: forged", "is not\na preset").what()) ==
        "model (llama\\u001B[31m\\u009B1m\\u000Aerror: forged) is not\na preset");
  // A C2 lead with a printable second byte (U+00A0 and above) is ordinary text.
  CHECK(printable_utf8("caf\xC3\xA9 \xC2\xA0") == "caf\xC3\xA9 \xC2\xA0");
  // A 10 MB key was echoed whole; the quote is cut to Error::kQuoteLimit (200) bytes with its full length.
  const std::string key(10'000'000, 'k');
  const std::string message = Error::invalid(key, "1", "is not a known key here").what();
  CHECK(message == std::string(200, 'k') + "... (10000000 bytes in all) (1) is not a known key here");
  // The cut falls on a UTF-8 boundary: 199 ASCII bytes then a 2-byte character that would end at 201 is left out.
  CHECK(clipped_utf8(std::string(199, 'a') + "\xC3\xA9" + "tail", 200) == std::string(199, 'a') + "... (205 bytes in all)");
  CHECK(clipped_utf8("short", 200) == "short");
}

TEST_CASE("an error found in a file names the file before the field and keeps its kind and parts", "[models][errors]") {
  const Error e = Error::not_modelled("parallel.zero_stage", "3", "ZeRO-3 with dualpipe").in("scenario runs/a.json");
  CHECK(std::string(e.what()) == "scenario runs/a.json: not modelled yet: parallel.zero_stage (3) ZeRO-3 with dualpipe");
  CHECK(e.kind() == ErrorKind::kNotModelled);
  CHECK(e.field() == "parallel.zero_stage");
  CHECK(e.value() == "3");
  // A file named with an escape sequence is escaped too.
  CHECK(std::string(Error::invalid("tp", "6", "must divide 64").in("scenario \x1B[2Ja.json").what()) ==
        "scenario \\u001B[2Ja.json: tp (6) must divide 64");
}
