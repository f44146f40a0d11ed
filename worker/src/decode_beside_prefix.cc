// EstimateDecodeBesidePrefix: see prefixd/worker/decode_beside_prefix.h.
#include "prefixd/worker/decode_beside_prefix.h"

#include <algorithm>
#include <limits>

#include "prefixd/common/error.h"

namespace prefixd::worker {

DecodeBesidePrefix ParseDecodeBesidePrefix(const std::string& name) {
  if (name == "off") return DecodeBesidePrefix::kOff;
  if (name == "auto") return DecodeBesidePrefix::kAuto;
  if (name == "always") return DecodeBesidePrefix::kAlways;
  PREFIXD_THROW(ErrorKind::kInvalidArgument, "decode beside prefix: unknown mode '" << name
                                                 << "' (expected off, auto or always)");
}

const char* DecodeBesidePrefixName(DecodeBesidePrefix mode) {
  return mode == DecodeBesidePrefix::kOff ? "off" : mode == DecodeBesidePrefix::kAuto ? "auto" : "always";
}

BesideEstimate EstimateDecodeBesidePrefix(const kernels::CascadePlan& plan, const kernels::KvPoolShape& pool,
                                          int num_sms, const BesideRates& rates) {
  BesideEstimate e;
  const int items = int(plan.prefix_items.size());
  e.idle_sms = items > 0 ? std::max(0, num_sms - items) : 0;
  double max_item_flops = 0;
  for (const kernels::PrefixWorkItem& it : plan.prefix_items)
    max_item_flops = std::max(max_item_flops, 4.0 * double(it.row_end - it.row_begin) *
                                                  double(it.kv_end - it.kv_begin) * pool.head_dim);
  double decode_bytes = 0;  // K and V of every decode item's tokens, one KV head each
  for (const kernels::DecodeWorkItem& it : plan.decode_items)
    decode_bytes += 2.0 * double(it.kv_end - it.kv_begin) * pool.head_dim * kernels::DTypeBytes(pool.dtype);
  e.prefix_us = rates.prefix_flops_per_s_per_sm > 0 ? max_item_flops / rates.prefix_flops_per_s_per_sm * 1e6 : 0;
  e.decode_us = e.idle_sms > 0 && rates.decode_bytes_per_s_per_sm > 0
                    ? decode_bytes / (e.idle_sms * rates.decode_bytes_per_s_per_sm) * 1e6
                    : std::numeric_limits<double>::infinity();
  return e;
}

}  // namespace prefixd::worker
