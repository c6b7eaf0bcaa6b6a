// Packed variable-length batches against hand counts: causal pairs l (l + 1) / 2 per document piece, Megatron's
// sampler order across DP ranks, Transformer Engine's 2 cp-chunk split balancing CP ranks, and one long document
// making its DP rank the slowest.
#include <catch2/catch.hpp>

#include "sim/packing.h"
#include "test_support.h"

using namespace orrery;

namespace {

PackingSpec lengths(std::vector<std::int64_t> l) {
  PackingSpec p;
  p.lengths = std::move(l);
  return p;
}

// One document of 4096 followed by 112 of 256: eight sequences of 4096, the first one the long document.
PackingSpec one_long() {
  std::vector<std::int64_t> l{4096};
  l.insert(l.end(), 112, 256);
  return lengths(l);
}

std::string llama(int dp, const std::string& packing) {
  return R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2}, "cluster": {"preset": "dgx-h100", "num_gpus": )" +
         std::to_string(dp) + R"(}, "training": {"seq_length": 4096, "global_batch_size": 8)" + packing + "}}";
}

}  // namespace

TEST_CASE("a packed batch with one long document shows the DP imbalance", "[sim][packing]") {
  const PackedBatch b = pack_documents(one_long(), 4096, 8, 1, 8, 1);
  CHECK(b.documents == 113);
  CHECK(b.pieces == 113);
  const double long_doc = 4096.0 * 4097 / 2, short_seq = 16 * 256.0 * 257 / 2;
  REQUIRE(b.dp_work.size() == 8);
  CHECK(b.dp_work[0] == Approx(long_doc));
  CHECK(b.dp_work[5] == Approx(short_seq));
  CHECK(b.critical_dp_rank == 0);
  CHECK(b.dp_imbalance == Approx(long_doc / ((long_doc + 7 * short_seq) / 8)));  // 5.56
  CHECK(b.packed_over_full == Approx((long_doc + 7 * short_seq) / (8 * long_doc)));
  REQUIRE(b.microbatch_fraction.size() == 1);
  CHECK(b.microbatch_fraction[0] == Approx(1.0));
}

TEST_CASE("the slowest DP rank sets the iteration time of a packed batch", "[sim][packing]") {
  const Prediction unpacked = predict(test::scenario(llama(8, "")));
  const Prediction long_doc = predict(test::scenario(llama(8, R"(, "packed_documents": {"lengths": [4096)" +
                                                                 [] {
                                                                   std::string s;
                                                                   for (int i = 0; i < 112; ++i) s += ", 256";
                                                                   return s;
                                                                 }() + "]}")));
  const Prediction short_docs = predict(test::scenario(llama(8, R"(, "packed_documents": {"lengths": [256]})")));
  // DP rank 0 holds the long document: its micro-batch costs what an unpacked one does.
  CHECK(long_doc.run.makespan == unpacked.run.makespan);
  REQUIRE(long_doc.report.packing);
  CHECK(long_doc.report.packing->dp_imbalance > 5.5);
  // All-short documents: 1/16 of the attention pairs on every rank, so less time.
  CHECK(short_docs.run.makespan < unpacked.run.makespan);
  CHECK(short_docs.report.packing->dp_imbalance == Approx(1.0));
  CHECK(short_docs.report.packing->packed_over_full == Approx(16 * 256.0 * 257 / (4096.0 * 4097)));
}

TEST_CASE("documents cut at sequence ends, in Megatron's sampler order", "[sim][packing]") {
  // Documents of 3000 tokens in sequences of 2048: pieces 2048 | 952 + 1096 | 1904 + 144 | 2048.
  const PackedBatch b = pack_documents(lengths({3000}), 2048, 4, 1, 2, 1);
  const auto pairs = [](double l) { return l * (l + 1) / 2; };
  // dp 2, micro-batch 1: rank 0 gets samples 0 and 2, rank 1 samples 1 and 3.
  CHECK(b.dp_work[0] == Approx(pairs(2048) + pairs(1904) + pairs(144)));
  CHECK(b.dp_work[1] == Approx(pairs(952) + pairs(1096) + pairs(2048)));
  CHECK(b.pieces == 6);
  CHECK(b.documents == 3);
}

TEST_CASE("the 2 cp chunk split balances causal work across CP ranks", "[sim][packing][cp]") {
  for (int cp : {2, 4, 8}) {
    INFO("cp " << cp);
    const std::int64_t l = 2 * cp * 64;  // divisible: every rank gets exactly the same work
    const double c = 64, length = static_cast<double>(l);
    double sum = 0;
    for (int r = 0; r < cp; ++r) {
      // Chunks r and 2cp-1-r: c^2 (2cp - 1) + c (c + 1) pairs (queries see all earlier chunks and half their own).
      CHECK(cp_rank_pairs(l, cp, r) == Approx(c * c * (2.0 * cp - 1) + c * (c + 1.0)));
      sum += cp_rank_pairs(l, cp, r);
    }
    CHECK(sum == Approx(length * (length + 1) / 2));
  }
  // A 5-token document over 4 ranks (8 chunks, three empty) is not balanced, and the report says so.
  const PackedBatch b = pack_documents(lengths({5}), 10, 1, 1, 1, 4);
  CHECK(b.cp_imbalance > 1.0);
}

TEST_CASE("bad packing input names the field", "[sim][packing][errors]") {
  CHECK_THAT(test::scenario_error(llama(8, R"(, "packed_documents": {"lengths": [0]})")),
             Catch::Contains("training.packed_documents.lengths"));
  CHECK_THAT(test::scenario_error(llama(8, R"(, "packed_documents": {"distribution": "lognormal", "median": -5})")),
             Catch::Contains("training.packed_documents.median (-5)"));
  CHECK_THAT(test::scenario_error(llama(8, R"(, "packed_documents": {"distribution": "zipf", "median": 5})")),
             Catch::Contains("training.packed_documents.distribution (zipf)"));
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 131072, "global_batch_size": 65536, "packed_documents": {"lengths": [1]}}})"),
             Catch::Contains("training.packed_documents"));
}
