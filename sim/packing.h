#pragma once
// Variable-length batches: documents packed into the global batch's sequences (Megatron-LM's GPT dataset
// concatenates documents and cuts them at sequence boundaries; with packed-sequence attention, THD format and
// cu_seqlens, a token attends only within its own document piece). Attention work then depends on the documents:
// a piece of l tokens costs l (l + 1) / 2 causal q x k pairs, not its share of s (s + 1) / 2, and the data-parallel
// ranks, each taking its own micro-batches, get different amounts of it: the slowest one holds up the gradient
// reduction. With context parallelism Transformer Engine splits every document piece into 2 cp chunks and gives
// rank r chunks r and 2 cp - 1 - r, which balances the causal work per document up to rounding.

#include <cstdint>
#include <vector>

#include "sim/scenario.h"

namespace orrery {

/// Attention work of a packed global batch, in causal q x k pairs (sums of l (l + 1) / 2 over document pieces).
struct PackedBatch {
  std::int64_t documents = 0;  // documents drawn or listed (before cutting at sequence boundaries)
  std::int64_t pieces = 0;     // document pieces after cutting
  std::int64_t sequences = 0;  // global batch size
  /// Per DP rank: the attention work of its micro-batches (on its busiest CP rank).
  std::vector<double> dp_work;
  int critical_dp_rank = 0;          // the DP rank with the most attention work
  double dp_imbalance = 1.0;         // max / mean of dp_work
  double cp_imbalance = 1.0;         // worst micro-batch: busiest CP rank's work / mean CP rank's work
  double packed_over_full = 1.0;     // batch's pairs / the pairs of one causal document per sequence
  /// For each micro-batch of the critical DP rank: its busiest CP rank's pairs over that rank's share of the
  /// unpacked causal pairs (1 = as if each sequence were one document). AttentionShape::packed_fraction.
  std::vector<double> microbatch_fraction;
};

/// Packs `spec`'s documents into `global_batch` sequences of `seq_length` tokens and assigns them as Megatron's
/// pretraining sampler does: micro-batch i of DP rank d holds samples i mbs dp + d mbs ... + mbs - 1.
/// A listed set of lengths repeats until the batch is full; a distribution is sampled with its seed.
PackedBatch pack_documents(const PackingSpec& spec, std::int64_t seq_length, std::int64_t global_batch,
                           std::int64_t micro_batch, int dp, int cp);

/// Causal pairs of CP rank `rank` of `cp` for one document piece of `length` tokens split into 2 cp chunks
/// (the first length mod 2 cp chunks one token longer).
double cp_rank_pairs(std::int64_t length, int cp, int rank);

}  // namespace orrery
