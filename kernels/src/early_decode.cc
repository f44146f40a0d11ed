#include "prefixd/kernels/early_decode.h"

#include <algorithm>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

EarlyDecodeSplit SplitEarlyDecode(const CascadePlan& plan, double early_share) {
  PREFIXD_CHECK_ARG(early_share >= 0.0 && early_share <= 1.0,
                    "SplitEarlyDecode: early_share " << early_share << " must be in [0, 1]");
  const int num_requests = plan.num_requests;
  // Requests finished by their decode items, and their suffix tokens (any one item's: a finishing
  // item covers the whole suffix).
  std::vector<int64_t> finished_tokens(size_t(num_requests), -1);
  for (const DecodeWorkItem& it : plan.decode_items)
    if (it.finish) finished_tokens[size_t(it.request)] = it.kv_end - it.kv_begin;
  int64_t total = 0;
  for (const int64_t t : finished_tokens) total += t > 0 ? t : 0;

  std::vector<char> early(size_t(num_requests), 0);
  int num_early_requests = 0;
  if (early_share > 0.0 && total > 0) {
    const double budget = early_share * double(total);
    int64_t taken = 0;
    for (int r = 0; r < num_requests; ++r) {
      if (finished_tokens[size_t(r)] <= 0) continue;
      if (num_early_requests > 0 && double(taken + finished_tokens[size_t(r)]) > budget) break;
      early[size_t(r)] = 1;
      taken += finished_tokens[size_t(r)];
      ++num_early_requests;
    }
  }

  EarlyDecodeSplit split;
  split.num_early_requests = num_early_requests;
  std::vector<DecodeWorkItem> merge_only, early_items;
  for (const DecodeWorkItem& it : plan.decode_items) {
    if (!early[size_t(it.request)]) {
      split.items.push_back(it);
      continue;
    }
    DecodeWorkItem e = it;  // the whole suffix, into the suffix slot
    e.finish = 0;
    early_items.push_back(e);
    DecodeWorkItem m = it;  // no tokens: the ⊕ of the prefix states and the early state
    m.kv_begin = m.kv_end;
    m.slot_offset = it.slot_offset + 1;
    merge_only.push_back(m);
  }
  split.items.insert(split.items.end(), merge_only.begin(), merge_only.end());
  split.num_late = int(split.items.size());
  split.items.insert(split.items.end(), early_items.begin(), early_items.end());
  split.num_early = int(early_items.size());
  return split;
}

bool EarlyDecodeAutoEligible(const CascadePlan& plan, int idle_sms, const EarlyDecodeRule& rule) {
  PREFIXD_CHECK_ARG(idle_sms >= 0, "EarlyDecodeAutoEligible: idle_sms " << idle_sms);
  if (idle_sms == 0 || plan.num_kv_heads <= 0 || plan.num_qo_heads > rule.max_gqa * plan.num_kv_heads) return false;
  return std::any_of(plan.decode_items.begin(), plan.decode_items.end(), [](const DecodeWorkItem& it) { return it.finish != 0; });
}

double EarlyDecodeAutoShare(const CascadePlan& plan, int idle_sms, double predicted_prefix_us, int64_t kv_token_bytes,
                            const EarlyDecodeRule& rule) {
  PREFIXD_CHECK_ARG(idle_sms >= 0 && kv_token_bytes > 0 && rule.sm_gbs > 0.0 && rule.safety > 0.0,
                    "EarlyDecodeAutoShare: idle_sms " << idle_sms << ", kv_token_bytes " << kv_token_bytes
                                                      << ", sm_gbs " << rule.sm_gbs << ", safety " << rule.safety);
  if (!EarlyDecodeAutoEligible(plan, idle_sms, rule) || !(predicted_prefix_us >= rule.min_prefix_us)) return 0.0;
  double finished_bytes = 0.0;  // the suffix K/V of the finishing items (one per request and KV head)
  for (const DecodeWorkItem& it : plan.decode_items)
    if (it.finish) finished_bytes += double(it.kv_end - it.kv_begin) * double(kv_token_bytes);
  if (finished_bytes <= 0.0) return 0.0;
  const double beside = double(idle_sms) * rule.sm_gbs * 1e3 * predicted_prefix_us;  // GB/s · µs = 1e3 bytes
  const double share = std::min(rule.max_share, rule.safety * beside / finished_bytes);
  return share >= rule.min_share ? share : 0.0;
}

}  // namespace prefixd::kernels
