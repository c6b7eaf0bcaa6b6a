#include "sim/packing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace orrery {

namespace {

double causal_pairs(double l) { return l * (l + 1.0) / 2.0; }

// Document lengths in packing order until `tokens` are covered.
std::vector<std::int64_t> document_stream(const PackingSpec& spec, std::int64_t tokens) {
  std::vector<std::int64_t> out;
  std::int64_t covered = 0;
  if (!spec.lengths.empty()) {
    for (std::size_t i = 0; covered < tokens; i = (i + 1) % spec.lengths.size()) {
      out.push_back(spec.lengths[i]);
      covered += spec.lengths[i];
    }
    return out;
  }
  std::mt19937_64 rng(spec.seed);
  std::lognormal_distribution<double> length(std::log(spec.median), spec.sigma);
  while (covered < tokens) {
    const auto l = std::max<std::int64_t>(1, std::llround(length(rng)));
    out.push_back(l);
    covered += l;
  }
  return out;
}

}  // namespace

double cp_rank_pairs(std::int64_t length, int cp, int rank) {
  const std::int64_t chunks = 2 * std::int64_t{cp};
  const std::int64_t base = length / chunks, extra = length % chunks;
  // Chunk j starts after the tokens of chunks 0..j-1; its queries see every key up to themselves.
  const auto chunk_pairs = [&](std::int64_t j) {
    const std::int64_t start = j * base + std::min(j, extra);
    const std::int64_t size = base + (j < extra ? 1 : 0);
    return causal_pairs(static_cast<double>(start + size)) - causal_pairs(static_cast<double>(start));
  };
  return chunk_pairs(rank) + chunk_pairs(chunks - 1 - rank);
}

PackedBatch pack_documents(const PackingSpec& spec, std::int64_t seq_length, std::int64_t global_batch,
                           std::int64_t micro_batch, int dp, int cp) {
  PackedBatch out;
  out.sequences = global_batch;
  const std::vector<std::int64_t> docs = document_stream(spec, seq_length * global_batch);
  out.documents = static_cast<std::int64_t>(docs.size());

  // Cut the stream at sequence boundaries: per sequence, the pieces' busiest-CP-rank and total pairs.
  std::vector<std::vector<double>> cp_pairs(static_cast<std::size_t>(global_batch), std::vector<double>(cp, 0.0));
  std::size_t doc = 0;
  std::int64_t left_in_doc = docs.empty() ? 0 : docs[0];
  for (std::int64_t seq = 0; seq < global_batch; ++seq) {
    std::int64_t room = seq_length;
    while (room > 0) {
      const std::int64_t piece = std::min(room, left_in_doc);
      for (int r = 0; r < cp; ++r) cp_pairs[static_cast<std::size_t>(seq)][static_cast<std::size_t>(r)] += cp_rank_pairs(piece, cp, r);
      ++out.pieces;
      room -= piece;
      left_in_doc -= piece;
      if (left_in_doc == 0 && ++doc < docs.size()) left_in_doc = docs[doc];
    }
  }

  // Megatron's sampler: micro-batch i of DP rank d is samples [i mbs dp + d mbs, ... + mbs).
  const std::int64_t microbatches = global_batch / (micro_batch * dp);
  const double full = static_cast<double>(micro_batch) * causal_pairs(static_cast<double>(seq_length));
  out.dp_work.assign(static_cast<std::size_t>(dp), 0.0);
  std::vector<std::vector<double>> fractions(static_cast<std::size_t>(dp));
  double total = 0;
  for (int d = 0; d < dp; ++d) {
    for (std::int64_t i = 0; i < microbatches; ++i) {
      std::vector<double> per_rank(static_cast<std::size_t>(cp), 0.0);
      for (std::int64_t j = 0; j < micro_batch; ++j) {
        const auto& seq = cp_pairs[static_cast<std::size_t>(i * micro_batch * dp + d * micro_batch + j)];
        for (int r = 0; r < cp; ++r) per_rank[static_cast<std::size_t>(r)] += seq[static_cast<std::size_t>(r)];
      }
      const double busiest = *std::max_element(per_rank.begin(), per_rank.end());
      const double sum = std::accumulate(per_rank.begin(), per_rank.end(), 0.0);
      total += sum;
      if (sum > 0) out.cp_imbalance = std::max(out.cp_imbalance, busiest * cp / sum);
      out.dp_work[static_cast<std::size_t>(d)] += busiest;
      fractions[static_cast<std::size_t>(d)].push_back(busiest * cp / full);
    }
  }
  const auto most = std::max_element(out.dp_work.begin(), out.dp_work.end());
  out.critical_dp_rank = static_cast<int>(most - out.dp_work.begin());
  const double mean = std::accumulate(out.dp_work.begin(), out.dp_work.end(), 0.0) / dp;
  out.dp_imbalance = mean > 0 ? *most / mean : 1.0;
  out.packed_over_full = total / (full * static_cast<double>(microbatches * dp));
  out.microbatch_fraction = std::move(fractions[static_cast<std::size_t>(out.critical_dp_rank)]);
  return out;
}

}  // namespace orrery
