#pragma once
// The work list `orrery-calibrate` measures: a line-based text file, so the GPU program reads it with the C++
// standard library alone (it is built on bare GPU machines that have the CUDA toolkit and nothing else).
// `orrery calibrate plan` writes it from the shapes sim/ lowers for a set of scenarios plus a log-spaced grid.
//
//   # comment                      blank lines and '#' comments are ignored
//   gemm M N K DTYPE               D[M x N] = A[M x K] B[K x N]; DTYPE bf16, fp16, tf32 or fp8 (E4M3 in, BF16 out)
//   memory KIND BYTES              KIND copy, elementwise or reduction; BYTES moved, read + write
//   collective OP BYTES            OP all_reduce, all_gather, reduce_scatter, all_to_all or send_recv; BYTES sized
//                                  as nccl-tests sizes them (all-gather: output, reduce-scatter: input)
//   launch                         the launch overhead of an empty kernel
//   attention B H KVH S D MASK DTYPE   fused attention, B sequences of S tokens, H query and KVH key/value heads
//                                  of D, MASK causal or full; measured by tools/calibrate_attention.py (PyTorch's
//                                  fused kernel), which reads the same plan; orrery-calibrate passes over them
//
// C++17 and the standard library only: this header is compiled by nvcc's host compiler as well.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace orrery::bench {

struct PlanGemm {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;  // bf16, fp16, tf32, fp8
  bool operator==(const PlanGemm& o) const { return m == o.m && n == o.n && k == o.k && dtype == o.dtype; }
};

struct PlanMemory {
  std::string kind;  // copy, elementwise, reduction
  std::int64_t bytes = 0;
  bool operator==(const PlanMemory& o) const { return kind == o.kind && bytes == o.bytes; }
};

struct PlanCollective {
  std::string op;  // all_reduce, all_gather, reduce_scatter, all_to_all, send_recv
  std::int64_t bytes = 0;
  bool operator==(const PlanCollective& o) const { return op == o.op && bytes == o.bytes; }
};

struct PlanAttention {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  std::string dtype;  // bf16, fp16
  bool operator==(const PlanAttention& o) const {
    return batch == o.batch && heads == o.heads && kv_heads == o.kv_heads && seq == o.seq && head_dim == o.head_dim &&
           causal == o.causal && dtype == o.dtype;
  }
};

struct BenchPlan {
  std::vector<PlanGemm> gemm;
  std::vector<PlanMemory> memory;
  std::vector<PlanCollective> collectives;
  std::vector<PlanAttention> attention;
  bool launch = false;
};

/// Parses a plan. Errors: std::invalid_argument "NAME:LINE: ..." naming the token and the rule (unknown entry,
/// dtype, kind or op; a size that is not a whole number in 1..2^40).
BenchPlan parse_bench_plan(std::istream& in, const std::string& name);

/// The plan as text, one entry a line in the order held; parse_bench_plan(format_bench_plan(p)) == p.
std::string format_bench_plan(const BenchPlan& plan);

}  // namespace orrery::bench
