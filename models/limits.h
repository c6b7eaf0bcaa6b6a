#pragma once
// Sanity limits of inputs: far beyond any real model, batch or cluster, and small enough that every size the
// simulator multiplies (tokens x hidden x bytes, heads x sequence^2) stays inside 64-bit integers. A value beyond
// a limit is an input error that names the limit.

#include <cstdint>

namespace orrery::limits {

// Layers: 10x the deepest published transformer (DeepNet, Wang et al. 2022, arXiv:2203.00555: 1,000 layers). The
// data-parallel epilogue's bucketing grows with layers squared: 10,000 lower in about 1.5 s, 100,000 took minutes.
inline constexpr std::int64_t kLayers = 10'000;
inline constexpr std::int64_t kHidden = 1 << 20;
inline constexpr std::int64_t kHeads = 1 << 16;
inline constexpr std::int64_t kHeadDim = 1 << 16;
inline constexpr std::int64_t kIntermediate = 1 << 24;
inline constexpr std::int64_t kVocab = 1 << 28;
inline constexpr std::int64_t kPositions = 1 << 30;
inline constexpr std::int64_t kExperts = 1 << 16;
inline constexpr std::int64_t kRank = 1 << 20;  // low-rank projection widths (MLA)
inline constexpr std::int64_t kGpus = 1 << 20;   // GPUs in one job
inline constexpr std::int64_t kGpusPerNode = 4096;
inline constexpr std::int64_t kSequence = 1 << 24;
inline constexpr std::int64_t kMicroBatch = 1 << 16;
inline constexpr std::int64_t kGlobalBatch = 1 << 28;
inline constexpr std::int64_t kTokensPerMicroBatch = std::int64_t{1} << 31;
inline constexpr double kSlowdown = 1000.0;  // a straggler's compute slowdown
inline constexpr std::int64_t kTasks = 150'000'000;            // tasks of one simulation (about 7 GB)
inline constexpr std::int64_t kTaskInstances = 2'000'000'000;  // tasks x simulated ranks with --expand-ranks
inline constexpr double kTaskSeconds = 1e6;                    // one task's duration
// Nesting of objects and arrays in any JSON input. The deepest real inputs (a preset's {"value", "source"} peak
// under cluster.gpu.peak_tflops, a Kineto trace's event args) are under 10 levels; copying and merging a document
// (preset overrides) recurse once per level, so a deeper one would only risk the stack.
inline constexpr int kJsonDepth = 64;

}  // namespace orrery::limits
