#pragma once
// Physical bounds of the measured numbers an input gives: GPU and cluster datasheet figures and the published
// figures a record expects. Each range holds today's hardware with a wide margin (mostly 10x the fastest part
// shipping in 2025), so that a slip of orders of magnitude (a peak of 1e300 TFLOP/s, an HBM of 1e10 GiB) is an
// input error that names the bound instead of a prediction. Sizes and counts are bounded in limits.h. Each range
// is in the unit its key names; FieldReader's range getters (json_fields.h) apply them.

namespace orrery::bounds {

/// A closed range [min, max] in `unit`, and the reason for it, both quoted by the error of a value outside it.
struct Range {
  double min;
  double max;
  const char* unit;
  const char* why;
};

// --- GPU (hardware/presets/gpus.json keys) ---

// Dense tensor-core peak of any precision. The fastest dense rate of any GPU today is NVIDIA Blackwell Ultra's
// NVFP4, 15 PFLOP/s dense per GB300 GPU (NVIDIA GB300 NVL72 datasheet and Hot Chips 2025, "15 PFLOPS dense FP4";
// FP8 is 5 PFLOP/s, hardware/presets/gpus.json). The floor is a hundredth of a 2017 V100's FP32 rate (15.7).
inline constexpr Range kPeakTflops{0.1, 150'000.0, "TFLOP/s",
                                   "10x the fastest dense rate of any GPU today, GB300's 15,000 TFLOP/s of NVFP4"};
// HBM per GPU: 288 GB (268 GiB) on B300, GB300 and MI355X is the most today; the floor is under any training GPU.
inline constexpr Range kHbmCapacityGiB{1.0, 4096.0, "GiB", "over 10x the 288 GB of B300 and MI355X, the most today"};
// HBM bandwidth: 8 TB/s on B200, B300 and MI355X is the most today (NVIDIA and AMD datasheets).
inline constexpr Range kHbmBandwidthTBs{0.1, 80.0, "TB/s", "10x the 8 TB/s of B200, B300 and MI355X, the most today"};
// GPU-to-GPU fabric per GPU and direction: NVLink 5 gives 900 GB/s (1.8 TB/s both ways, NVIDIA B200 datasheet).
inline constexpr Range kNvlinkGBs{1.0, 9'000.0, "GB/s", "10x NVLink 5's 900 GB/s per direction, the fastest today"};
// Host link per direction: NVLink-C2C gives 450 GB/s (900 GB/s both ways, NVIDIA Grace Hopper datasheet); PCIe 6.0
// x16 128 GB/s.
inline constexpr Range kHostLinkGBs{1.0, 4'500.0, "GB/s", "10x NVLink-C2C's 450 GB/s per direction, the fastest host link"};
// L2 (or last-level) cache: 256 MB of Infinity Cache on MI300X is the most today; V100 has 6 MiB.
inline constexpr Range kL2CacheMiB{0.25, 4'096.0, "MiB", "over 10x MI300X's 256 MB, the largest today"};
// Board power: 1,400 W on B300, GB300 and MI355X is the most today (NVIDIA and AMD datasheets).
inline constexpr Range kBoardPowerW{10.0, 14'000.0, "W", "10x the 1,400 W of B300 and MI355X, the most today"};
// Idle draw, from 0 (not measured) up to the board-power bound.
inline constexpr Range kIdlePowerW{0.0, 14'000.0, "W", "no more than the board-power bound"};
// SM clock: no GPU boosts past 2.52 GHz today (GeForce RTX 4090; B200 1965 MHz, MI355X 2400 MHz); H200 idles at
// 345 MHz (scenarios/measured/h200-2026-11-30).
inline constexpr Range kClockMHz{100.0, 10'000.0, "MHz", "about 4x the 2.52 GHz of the fastest-clocked GPU today"};

// Attention kernels' share of the dense tensor-core peak (attention_peak_fraction, head_dim_64): cuDNN's fused
// attention reaches 0.53 of an H100's BF16 peak (FlashAttention-3, arXiv:2407.08608, Fig. 5); a hundredth would make
// every attention kernel 50 times slower than any measured, which is a slip, not a GPU.
inline constexpr Range kAttentionPeakFraction{0.01, 1.0, "", "a share of the tensor-core peak; measured fused "
                                                               "attention reaches about half of it"};
// Head dim 64's attention rate over head dim 128's (attention_peak_fraction.head_dim_64): cuDNN measured 0.67 (same
// figure); the narrower head runs no faster.
inline constexpr Range kHeadDim64Ratio{0.01, 1.0, "", "head dim 64's rate over head dim 128's, which it does not "
                                                     "exceed; 0.67 measured"};

// --- Cluster (hardware/presets/clusters.json keys) ---

// One NIC's line rate: 800 Gbit/s (ConnectX-8 SuperNIC, Quantum-X800 InfiniBand) is the fastest today.
inline constexpr Range kNicGbits{1.0, 8'000.0, "Gbit/s", "10x the 800 Gbit/s of ConnectX-8, the fastest NIC today"};
// One hop's latency: a switch traversal is 90-330 ns and NCCL's NVLink hop 3.4 us (clusters.json); 1 ns is 20 cm
// of copper, and 10 ms a 1,000 km fibre round trip, beyond any link inside one training job.
inline constexpr Range kLatencyUs{0.001, 10'000.0, "us", "between 20 cm of copper and a 1,000 km fibre round trip"};
// A node's CPU DRAM bandwidth, all sockets: a GB200 compute tray's two Grace CPUs give 1,024 GB/s (clusters.json).
inline constexpr Range kHostMemoryGBs{1.0, 10'240.0, "GB/s", "10x the 1,024 GB/s of a GB200 tray's two Grace CPUs"};
// A tier's down:up bandwidth ratio: 1 is non-blocking; fabrics built for training stay under 4:1.
inline constexpr Range kOversubscription{1.0, 1'000.0, "", "a down:up bandwidth ratio, 1 being non-blocking"};

// --- Model (Hugging Face config.json keys that set no size) ---

// RoPE's base theta: the rotary frequencies are theta^(-2i/d) (Su et al., RoFormer, arXiv:2104.09864, eq. 15), so
// below 1 they would rise with the dimension. The presets use 1e4 (Llama 2, DeepSeek-V3) to 1e6 (Qwen2.5, Qwen3);
// long-context fine-tunes raise it to a few 1e9. Nothing is priced from it (the rotary's cost does not depend on it),
// but 1e300 is a slip of the pen.
inline constexpr Range kRopeTheta{1.0, 1e10, "", "10,000x Qwen's 1e6, the largest base among the presets"};
// rope_scaling.factor: transformers' rope validation asks for a factor of at least 1 (modeling_rope_utils.py); the
// largest in use is DeepSeek-V3's YaRN factor of 40.
inline constexpr Range kRopeScalingFactor{1.0, 10'000.0, "", "at least 1, as transformers asks, and 250x DeepSeek-V3's "
                                                            "40, the largest in use"};
// swiglu_limit, the clamp on the gated activation's inputs: GPT-OSS clamps at 7.0, the only model that does.
inline constexpr double kMaxSwigluLimit = 10'000.0;

// --- Measured GPU profiles (orrery calibrate fit, hardware/profiles) ---

// One measured kernel or collective: no GPU work is shorter than a clock cycle (under 1 ns above 1 GHz); none may
// run longer than one task (limits::kTaskSeconds).
inline constexpr Range kMeasuredSeconds{1e-9, 1e6, "s", "between one GPU clock cycle and the longest task"};
// One kernel launch's cost: PyTorch measures 2-6 us (cost_model.json); 10 ms would be a unit slip.
inline constexpr Range kLaunchSeconds{0.0, 0.01, "s", "over 1,000x the 2-6 us launches measured"};

// --- Published figures a record expects (scenario `expect`) ---

// The step time: a microsecond is less than one kernel launch, 1e6 s (11.6 days) the longest one task may run
// (limits::kTaskSeconds).
inline constexpr Range kIterationSeconds{1e-6, 1e6, "s", "between one kernel launch and 11.6 days"};
// Tokens per second per GPU: one token per GPU in the longest step, up to a GPU at the peak bound training a
// million-parameter model (150 PFLOP/s / (6 FLOPs per parameter per token x 1e6) = 2.5e10).
inline constexpr Range kTokensPerSecondPerGpu{1e-6, 2.5e10, "tokens/s", "one token per GPU in the longest step up to "
                                                                        "a GPU at the peak bound on a 1M-parameter model"};
// Achieved TFLOP/s per GPU: up to the peak bound; a thousandth of a TFLOP/s is below any published training run.
inline constexpr Range kAchievedTflops{1e-3, 150'000.0, "TFLOP/s", "up to the GPU peak bound"};
// MFU and HFU: fractions; below 0.01% no published run reports one.
inline constexpr Range kUtilization{1e-4, 1.0, "", "a fraction of the peak, at most 1"};
// Peak memory per GPU: up to the HBM bound.
inline constexpr Range kPeakMemoryGiB{1e-3, 4096.0, "GiB", "up to the HBM-capacity bound"};

}  // namespace orrery::bounds
