#include "hardware/nccl_tuning.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <span>

namespace orrery::nccl {

namespace {

// Rows by Generation (Volta, Ampere, Hopper, Blackwell), columns by nodes (1, 2, more): tuning.cc @ v2.23.4-1,
// the Blackwell rows @ v2.25.1-1 (2x Hopper's).
constexpr double kLLMaxBws[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0},
                                    {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bws[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7},
                                                {2 * 36.7, 2 * 36.7, 2 * 36.7}};
constexpr double kPerChMaxTreeLL128Bws[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0},
                                                {2 * 36.7, 2 * 36.7, 2 * 29.0}};
constexpr double kPerChMaxTreeBws[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0},
                                           {2 * 38.7, 2 * 41.4, 2 * 36.0}};

// tuning.cc @ v2.23.4-1, treeCorrectionFactor[protocol][log2(bytes / 64)].
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// src/graph/search.cc @ v2.23.4-1: speedArrayIntra and sm90SpeedArrayIntra (GB/s per channel).
constexpr double kSpeedsIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr double kSpeedsIntraSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr int kMaxChannels = 32;  // src/include/device.h @ v2.23.4-1, MAXCHANNELS

// src/include/device.h and comm.h @ v2.23.4-1.
constexpr int kMaxThreads[3] = {512, 640, 512};     // NCCL_LL_, NCCL_LL128_, NCCL_SIMPLE_MAX_NTHREADS
constexpr int kThreadThreshold[3] = {8, 8, 64};     // NCCL_LL_, NCCL_LL128_, NCCL_SIMPLE_THREAD_THRESHOLD

int row(Generation g) { return g == Generation::kOther ? 0 : static_cast<int>(g); }
int column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

}  // namespace

const char* protocol_name(int protocol) {
  constexpr const char* kNames[3] = {"ll", "ll128", "simple"};
  return kNames[protocol];
}

Generation generation(const GpuSpec& gpu) {
  if (gpu.architecture == "volta") return Generation::kVolta;
  if (gpu.architecture == "ampere") return Generation::kAmpere;
  if (gpu.architecture == "hopper") return Generation::kHopper;
  if (gpu.architecture == "blackwell") return Generation::kBlackwell;
  return Generation::kOther;
}

bool ll128_enabled(Generation g) { return g != Generation::kOther; }

double ring_plateau_factor(Generation g) {
  return g == Generation::kVolta || g == Generation::kOther ? 1.9 : 1.4;
}

double ll_max_bw(Generation g, int nodes) {
  // Across nodes NCCL indexes the row by CPU vendor, not GPU: Intel x86 (row 0) assumed.
  return nodes <= 1 ? kLLMaxBws[row(g)][0] : kLLMaxBws[0][column(nodes)];
}
double ring_ll128_per_channel(Generation g, int nodes) { return kPerChMaxRingLL128Bws[row(g)][column(nodes)]; }
double tree_per_channel(Generation g, int nodes) { return kPerChMaxTreeBws[row(g)][column(nodes)]; }
double tree_ll128_per_channel(Generation g, int nodes) { return kPerChMaxTreeLL128Bws[row(g)][column(nodes)]; }

double tree_correction(int protocol, Bytes bytes) {
  if (bytes < 64) return 1.0;
  const int log_size = static_cast<int>(std::floor(std::log2(static_cast<double>(bytes / 64))));  // log2i(n >> 6)
  return log_size < 23 ? kTreeCorrection[protocol][log_size] : 1.0;
}

int channels(const GpuSpec& gpu) {
  const Generation g = generation(gpu);
  const bool sm90 = g == Generation::kHopper || g == Generation::kBlackwell;
  const double link_GB_s = g == Generation::kBlackwell ? 50.0 : 25.0;  // physical, per direction
  const double nccl_link_GB_s = g == Generation::kBlackwell ? 40.0 : g == Generation::kHopper ? 20.6 : 20.0;
  const double total = to_GB_s(gpu.intra_node_bandwidth()) / link_GB_s * nccl_link_GB_s;
  double speed = sm90 ? kSpeedsIntraSm90[std::size(kSpeedsIntraSm90) - 1] : kSpeedsIntra[std::size(kSpeedsIntra) - 1];
  for (double s : sm90 ? std::span<const double>(kSpeedsIntraSm90) : std::span<const double>(kSpeedsIntra)) {
    if (s <= total) {
      speed = s;
      break;
    }
  }
  int n = std::clamp(static_cast<int>(total / speed), 1, kMaxChannels / 2);
  // ncclTopoDupChannels: not below 25 GB/s a channel, nor from cc > 80 below 50 GB/s with more than 4 channels.
  if (speed >= 25.0 && !(sm90 && speed < 50.0 && n > 4)) n = std::min(2 * n, kMaxChannels / 2);
  return std::min(2 * n, kMaxChannels);
}

int channels_for(int protocol, bool ring, int ranks, Bytes bytes, int max_channels) {
  const double per_channel =
      static_cast<double>(kMaxThreads[protocol]) * kThreadThreshold[protocol] * (ring && protocol == kLL ? ranks : 1);
  const int fit = static_cast<int>(static_cast<double>(bytes) / per_channel);
  return std::clamp(fit, 1, max_channels);
}

}  // namespace orrery::nccl
