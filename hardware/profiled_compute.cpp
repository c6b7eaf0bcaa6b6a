#include "hardware/profiled_compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace orrery {

namespace {

// The grid values bracketing `x` in the sorted `values`: {lo, hi} (lo == hi on a grid value), or false outside.
bool bracket(const std::vector<std::int64_t>& values, std::int64_t x, std::int64_t& lo, std::int64_t& hi) {
  if (values.empty() || x < values.front() || x > values.back()) return false;
  const auto it = std::lower_bound(values.begin(), values.end(), x);
  hi = *it;
  lo = *it == x ? x : *(it - 1);
  return true;
}

// Weight of `x` towards `hi` on the log axis between lo and hi.
double log_weight(std::int64_t lo, std::int64_t hi, std::int64_t x) {
  if (lo == hi) return 0.0;
  return std::log(static_cast<double>(x) / static_cast<double>(lo)) /
         std::log(static_cast<double>(hi) / static_cast<double>(lo));
}

}  // namespace

ProfiledComputeModel::ProfiledComputeModel(GpuProfile profile, std::unique_ptr<ComputeCostModel> fallback,
                                           double clock_slowdown)
    : profile_(std::move(profile)), clock_slowdown_(clock_slowdown), fallback_(std::move(fallback)) {
  for (const GemmSample& g : profile_.gemm) {
    GemmTable& t = gemm_tables_[g.dtype];
    t.seconds[{g.m, g.n, g.k}] = g.seconds;
    t.m.push_back(g.m);
    t.n.push_back(g.n);
    t.k.push_back(g.k);
  }
  for (auto& [dtype, t] : gemm_tables_) {
    for (auto* axis : {&t.m, &t.n, &t.k}) {
      std::sort(axis->begin(), axis->end());
      axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
    }
  }
}

Seconds ProfiledComputeModel::profiled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const {
  const auto table = gemm_tables_.find(dtype);
  if (table == gemm_tables_.end()) return -1.0;
  const GemmTable& t = table->second;
  if (const auto it = t.seconds.find({m, n, k}); it != t.seconds.end()) return it->second;
  // Up to four candidate grid values below and above x on each axis, nearest first (x itself when measured).
  const auto candidates = [](const std::vector<std::int64_t>& axis, std::int64_t x, bool below) {
    std::vector<std::int64_t> out;
    if (below) {
      for (auto it = std::upper_bound(axis.begin(), axis.end(), x); it != axis.begin() && out.size() < 4;) out.push_back(*--it);
    } else {
      for (auto it = std::lower_bound(axis.begin(), axis.end(), x); it != axis.end() && out.size() < 4; ++it) out.push_back(*it);
    }
    return out;
  };
  const auto m_lo = candidates(t.m, m, true), m_hi = candidates(t.m, m, false);
  const auto n_lo = candidates(t.n, n, true), n_hi = candidates(t.n, n, false);
  const auto k_lo = candidates(t.k, k, true), k_hi = candidates(t.k, k, false);
  const auto span = [](std::int64_t lo, std::int64_t hi) { return std::log(static_cast<double>(hi) / static_cast<double>(lo)); };
  const auto time_at = [&](std::int64_t a, std::int64_t b, std::int64_t c) {
    const auto it = t.seconds.find({a, b, c});
    return it == t.seconds.end() ? -1.0 : it->second;
  };
  // The smallest cell (in summed log extent) around (m, n, k) whose corners were all measured: shapes measured off
  // the grid (the scenarios' own) must not punch holes in the grid around them.
  double best_size = INFINITY, best = -1.0;
  for (std::int64_t m0 : m_lo) for (std::int64_t m1 : m_hi) for (std::int64_t n0 : n_lo) for (std::int64_t n1 : n_hi)
  for (std::int64_t k0 : k_lo) for (std::int64_t k1 : k_hi) {
    const double size = span(m0, m1) + span(n0, n1) + span(k0, k1);
    if (size >= best_size) continue;
    const double wm = log_weight(m0, m1, m), wn = log_weight(n0, n1, n), wk = log_weight(k0, k1, k);
    double log_time = 0;
    bool complete = true;
    for (int corner = 0; corner < 8 && complete; ++corner) {
      const bool hm = corner & 1, hn = corner & 2, hk = corner & 4;
      const double w = (hm ? wm : 1 - wm) * (hn ? wn : 1 - wn) * (hk ? wk : 1 - wk);
      if (w == 0) continue;
      const double time = time_at(hm ? m1 : m0, hn ? n1 : n0, hk ? k1 : k0);
      complete = time > 0;
      if (complete) log_time += w * std::log(time);
    }
    if (!complete) continue;
    best_size = size;
    best = std::exp(log_time);
  }
  return best;
}

Seconds ProfiledComputeModel::gemm(const GemmShape& s) const {
  if (s.batch == 1 || s.grouped) {
    const Seconds t = profiled_gemm(s.m, s.n, s.k, s.dtype);
    if (t > 0 && s.dtype == DType::kFp8 && s.fp8_scaling != Fp8Scaling::kTensor) {
      // Profiles time per-tensor-scaled FP8 (cuBLASLt); a block-scaled GEMM takes the measured time slowed as the
      // default model slows it (GpuSpec::fp8_scaling_fraction on the compute-bound part).
      GemmShape tensor = s;
      tensor.fp8_scaling = Fp8Scaling::kTensor;
      return t * clock_slowdown_ * static_cast<double>(s.batch) * fallback_->gemm(s) / fallback_->gemm(tensor);
    }
    if (t > 0) return t * clock_slowdown_ * static_cast<double>(s.batch);
  }
  ++uncovered_gemms_;
  if (example_.empty()) example_ = fmt::format("{} x {} x {} {}", s.m, s.n, s.k, to_string(s.dtype));
  return fallback_->gemm(s);
}

Seconds ProfiledComputeModel::profiled_attention(const AttentionShape& a) const {
  if (a.q_len != a.kv_len || a.window != 0 || a.half_block || a.packed_fraction != 1.0 ||
      a.head_dim_qk != a.head_dim_v || a.kv_heads <= 0 || a.heads % a.kv_heads != 0) {
    return -1.0;
  }
  const double units = static_cast<double>(a.batch * a.heads);
  // Per measured sequence length, the time per (batch x heads) of the sample nearest the op's batch x heads.
  std::vector<std::pair<std::int64_t, const AttentionSample*>> by_seq;
  for (const AttentionSample& s : profile_.attention) {
    if (s.head_dim != a.head_dim_qk || s.causal != a.causal || s.backward != a.backward || s.dtype != a.dtype ||
        s.heads / s.kv_heads != a.heads / a.kv_heads) {
      continue;
    }
    auto it = std::find_if(by_seq.begin(), by_seq.end(), [&](const auto& e) { return e.first == s.seq; });
    const auto distance = [&](const AttentionSample* x) {
      return std::abs(std::log(static_cast<double>(x->batch * x->heads) / units));
    };
    if (it == by_seq.end()) {
      by_seq.emplace_back(s.seq, &s);
    } else if (distance(&s) < distance(it->second)) {
      it->second = &s;
    }
  }
  std::sort(by_seq.begin(), by_seq.end());
  std::vector<std::int64_t> seqs;
  for (const auto& e : by_seq) seqs.push_back(e.first);
  std::int64_t lo = 0, hi = 0;
  if (!bracket(seqs, a.q_len, lo, hi)) return -1.0;
  const auto unit_time = [&](std::int64_t seq) {
    const AttentionSample* s = std::find_if(by_seq.begin(), by_seq.end(), [&](const auto& e) { return e.first == seq; })->second;
    return s->seconds / static_cast<double>(s->batch * s->heads);
  };
  const double w = log_weight(lo, hi, a.q_len);
  return units * std::exp((1 - w) * std::log(unit_time(lo)) + w * std::log(unit_time(hi)));
}

Seconds ProfiledComputeModel::attention(const AttentionShape& a) const {
  const Seconds t = profiled_attention(a);
  if (t > 0) return t * clock_slowdown_;
  ++uncovered_attention_;
  return fallback_->attention(a);
}

Seconds ProfiledComputeModel::elementwise(const ElementwiseShape& s) const {
  if (s.kernels > 1) {
    // Separate launches of equal shares: one measured copy of a share, that many times.
    ElementwiseShape one = s;
    one.kernels = 1;
    one.bytes_read /= s.kernels;
    one.bytes_written /= s.kernels;
    one.flops /= static_cast<double>(s.kernels);
    return static_cast<double>(s.kernels) * elementwise(one);
  }
  const Bytes bytes = s.bytes();
  if (bytes <= 0) return fallback_->elementwise(s);
  const std::string family = profile_kind(s.kernel);
  const Seconds own = memory_samples_time(family, bytes);
  if (own > 0) return own;
  const Seconds copy = memory_samples_time("copy", bytes);
  if (copy <= 0) {
    ++uncovered_memory_;
    return fallback_->elementwise(s);
  }
  // Below a PyTorch family's smallest measured size: the copy kernel's time there (its samples reach down to where
  // launch latency dominates), times the family's slowdown against the copy kernel at its smallest measured size.
  const CopySample* smallest = nullptr;
  for (const CopySample& m : profile_.memory) {
    if (m.kind == family && (!smallest || m.bytes < smallest->bytes)) smallest = &m;
  }
  if (!smallest) return copy;
  const Seconds copy_there = memory_samples_time("copy", smallest->bytes);
  return copy_there > 0 ? copy * smallest->seconds / copy_there : copy;
}

Seconds ProfiledComputeModel::memory_samples_time(const std::string& kind, Bytes bytes) const {
  const CopySample* lo = nullptr;
  const CopySample* hi = nullptr;
  for (const CopySample& m : profile_.memory) {
    if (m.kind != kind) continue;
    if (m.bytes <= bytes && (!lo || m.bytes > lo->bytes)) lo = &m;
    if (m.bytes >= bytes && (!hi || m.bytes < hi->bytes)) hi = &m;
  }
  if (!lo) return 0;  // below the smallest sample (or none of this kind)
  // Beyond the largest measured size the kernel is bandwidth-bound: the largest sample's bandwidth holds.
  if (!hi) return lo->seconds * static_cast<double>(bytes) / static_cast<double>(lo->bytes);
  if (lo->bytes == hi->bytes) return lo->seconds;
  const double w = std::log(static_cast<double>(bytes) / static_cast<double>(lo->bytes)) /
                   std::log(static_cast<double>(hi->bytes) / static_cast<double>(lo->bytes));
  return std::exp((1 - w) * std::log(lo->seconds) + w * std::log(hi->seconds));
}

}  // namespace orrery
