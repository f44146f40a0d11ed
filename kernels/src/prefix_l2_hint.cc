#include "prefixd/kernels/prefix_l2_hint.h"

namespace prefixd::kernels {

bool PrefixKvEvictFirst(const CascadePlan& plan, int64_t l2_bytes, const PrefixL2HintRule& rule) {
  if (l2_bytes <= 0 || plan.prefix_items.empty() || plan.num_kv_heads <= 0) return false;
  const int64_t g = plan.gqa_group_size();
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const bool has_prefix_items = i < plan.group_num_chunks.size() && plan.group_num_chunks[i] > 0;
    if (has_prefix_items && int64_t(plan.groups[i].num_requests) * g > rule.max_rows) return false;
  }
  int64_t decode_tokens = 0;  // Σ over items (one KV head each) of their token ranges
  for (const DecodeWorkItem& item : plan.decode_items) decode_tokens += item.kv_end - item.kv_begin;
  const double decode_bytes = double(decode_tokens) * plan.head_dim * 2 /*K, V*/ * 2 /*bytes*/;
  return decode_bytes <= rule.max_decode_l2_multiple * double(l2_bytes);
}

}  // namespace prefixd::kernels
