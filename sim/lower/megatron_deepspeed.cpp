#include "sim/lower/megatron_deepspeed.h"

namespace orrery {

std::vector<std::vector<std::size_t>> deepspeed_buckets(const std::vector<std::int64_t>& elements, std::int64_t bucket,
                                                        DeepSpeedBucketRule rule) {
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::size_t> open;
  std::int64_t filled = 0;
  auto close = [&] {
    if (!open.empty()) out.push_back(open);
    open.clear();
    filled = 0;
  };
  for (std::size_t i = 0; i < elements.size(); ++i) {
    // Source: stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads ("bucket.elements + param.numel() >
    // self.reduce_bucket_size"), engine.py allreduce_no_retain ("numel > numel_per_bucket"), @ edaa722.
    if (rule == DeepSpeedBucketRule::kFlushBeforeOverflow && filled + elements[i] > bucket) close();
    open.push_back(i);
    filled += elements[i];
    if (rule == DeepSpeedBucketRule::kCloseAfterExceeding && filled > bucket) close();
  }
  close();
  return out;
}

}  // namespace orrery
