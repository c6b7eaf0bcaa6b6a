#pragma once
// NCCL's own tuning model, as the constants and small formulas of its source at one version: NCCL v2.23.4-1
// (github.com/NVIDIA/nccl, the version the nccl-tests image of tests/data/nccl-tests-logs/01 pinned); Blackwell,
// which v2.23.4-1 does not know, from v2.25.1-1, its first release with Blackwell rows. Bandwidths are NCCL's
// GB/s (1e9 B/s) of bus bandwidth, latencies microseconds, as tuning.cc writes them.

#include <string>

#include "hardware/gpu_spec.h"
#include "models/units.h"

namespace orrery::nccl {

/// NCCL's protocols, in its order (src/include/device.h @ v2.23.4-1: NCCL_PROTO_LL 0, LL128 1, SIMPLE 2).
enum Protocol { kLL = 0, kLL128 = 1, kSimple = 2 };
inline constexpr int kProtocols = 3;
const char* protocol_name(int protocol);  // "ll", "ll128", "simple"

/// tuning.cc's compute-capability index (VOLTA_COMPCAP_IDX 0, AMPERE 1, HOPPER 2; BLACKWELL 3 from v2.25.1-1),
/// from the GPU preset's architecture; kOther (AMD and unknown) takes Volta's rows, as cc < 80 does in NCCL.
enum class Generation { kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3, kOther = 4 };
Generation generation(const GpuSpec& gpu);

/// LL128 is enabled by default only on Volta, Ampere, Hopper (and Blackwell from v2.25.1-1) over NVLink
/// (tuning.cc, protoEnable[LL128] == 2 switch on minCompCap).
bool ll128_enabled(Generation g);

// Per-step latencies (tuning.cc @ v2.23.4-1, baseLat and hwLat), us, by protocol {LL, LL128, Simple}.
inline constexpr double kRingBaseUs[3] = {6.6, 14.0, 8.4};
inline constexpr double kTreeBaseUs[3] = {6.8, 14.0, 8.4};
inline constexpr double kRingNvlinkUs[3] = {0.6, 1.9, 3.4};
inline constexpr double kTreeNvlinkUs[3] = {0.6, 1.25, 4.0};
inline constexpr double kRingNetUs[3] = {2.7, 4.0, 14.0};
inline constexpr double kTreeNetUs[3] = {5.0, 8.5, 14.0};
inline constexpr double kNvlsNvlinkUs = 25.0;      // hwLat[NVLINK][NVLS][Simple]; NVLS latency = this alone
inline constexpr double kNvlsTreeNvlinkUs = 25.0;  // hwLat[NVLINK][NVLS_TREE][Simple]
inline constexpr double kNvlsTreeNetUs = 14.0;     // hwLat[NET][NVLS_TREE][Simple]
/// getNetOverhead (tuning.cc @ v2.23.4-1): 1 us per network post on x86 Intel, 3x for Simple; a multi-node ring's
/// intra-node steps cost at least this. Intel assumed (2 us on AMD).
inline constexpr double kNetOverheadUs = 1.0;
/// ncclTopoGetAlgoTime (tuning.cc @ v2.23.4-1): a multi-node Simple ring all-reduce with >= 64 bytes per channel
/// and rank pays 1.4x its latency on cc >= 80 ("plateau effect of ring"), 1.9x before.
double ring_plateau_factor(Generation g);

// Bandwidth caps and shares (tuning.cc @ v2.23.4-1, "various model refinements"), nodes = 1, 2 or more.
double ll_max_bw(Generation g, int nodes);            // llMaxBws (GB/s, all channels): single node by GPU, else CPU
double ring_ll128_per_channel(Generation g, int nodes);  // perChMaxRingLL128Bws (GB/s per graph channel)
double tree_per_channel(Generation g, int nodes);        // perChMaxTreeBws
double tree_ll128_per_channel(Generation g, int nodes);  // perChMaxTreeLL128Bws
inline constexpr double kRingLLShare = 0.5;      // ring LL: busBw x .5
inline constexpr double kRingLL128Share = 0.92;  // ring LL128: busBw x 0.92 (120/128)
inline constexpr double kTreeLLShare = 1.0 / 3.8;         // tree LL: busBw / 3.8
inline constexpr double kTreeLL128ShareMultiNode = 120.0 / 128.0;  // tree LL128 across nodes (7/9 in one)

/// treeCorrectionFactor (tuning.cc @ v2.23.4-1): the tree all-reduce's bandwidth at message sizes 64 B x 2^i,
/// i = log2(bytes / 64) in [0, 23); 1 outside.
double tree_correction(int protocol, Bytes bytes);

/// comm->nChannels for a node of these GPUs: the ring search of src/graph/search.cc @ v2.23.4-1 (the fastest
/// speed of speedArrayIntra, or sm90SpeedArrayIntra from Hopper, that the GPU's NVLink bandwidth holds, as many
/// channels of it as fit, at most MAXCHANNELS/2 = 16), ncclTopoDupChannels' doubling, and connect.cc's second
/// doubling ("Duplication should be complete now", at most MAXCHANNELS = 32). The NVLink bandwidth is NCCL's
/// (src/graph/topo.h: 20.0 GB/s per link to Ampere, 20.6 on Hopper, 40.0 on Blackwell @ v2.25.1-1) over links
/// of 25 GB/s (50 on Blackwell) per direction. 24 on DGX A100 and H100, 32 on B200.
int channels(const GpuSpec& gpu);

/// Channels topoGetAlgoInfo (src/enqueue.cc @ v2.23.4-1) runs a ring or tree call of `bytes` on: it drops one
/// while bytes < channels x threads x threadThreshold, down to 1. Threads: NCCL_LL_MAX_NTHREADS 512,
/// NCCL_LL128_MAX_NTHREADS 640, NCCL_SIMPLE_MAX_NTHREADS 512; thresholds (src/include/comm.h): LL 8 (x ranks for
/// rings, tuning.cc), LL128 8, Simple 64 bytes per thread.
int channels_for(int protocol, bool ring, int ranks, Bytes bytes, int max_channels);

}  // namespace orrery::nccl
