#include "src/backend_common.h"

#include <chrono>
#include <cmath>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

const char* BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "unknown";
}

double Backend::TimeUs(const std::function<void()>& enqueue) {
  Synchronize();
  const auto start = std::chrono::steady_clock::now();
  enqueue();
  Synchronize();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

float ResolveSmScale(float sm_scale, int head_dim) {
  // The kernels take each tile's max of the unscaled scores and scale it (max(x)·c = max(x·c) only
  // for c ≥ 0), so a negative scale would give wrong results, not an error: refuse it here.
  PREFIXD_CHECK_ARG(std::isfinite(sm_scale) && sm_scale >= 0.f,
                    "sm_scale must be finite and ≥ 0 (0: 1/sqrt(head_dim)), got " << sm_scale);
  return sm_scale == 0.f ? 1.f / std::sqrt(float(head_dim)) : sm_scale;
}

void CheckPlanFitsWorkspace(const CascadePlan& plan, size_t plan_ints, const WorkspaceLimits& limits) {
  PREFIXD_CHECK_ARG(plan.num_requests <= limits.max_requests,
                    "plan has " << plan.num_requests << " requests, the workspace holds " << limits.max_requests);
  PREFIXD_CHECK_ARG(plan.num_qo_heads <= limits.max_qo_heads,
                    "plan has " << plan.num_qo_heads << " query heads, the workspace holds " << limits.max_qo_heads);
  PREFIXD_CHECK_ARG(plan.head_dim <= limits.max_head_dim,
                    "plan has head_dim " << plan.head_dim << ", the workspace holds " << limits.max_head_dim);
  PREFIXD_CHECK_ARG(plan.num_slots() <= limits.max_slots,
                    "plan needs " << plan.num_slots() << " partial-state slots, the workspace holds "
                                  << limits.max_slots);
  const int64_t state_floats = int64_t(plan.num_slots()) * plan.num_qo_heads * plan.head_dim;
  PREFIXD_CHECK_ARG(state_floats <= limits.max_state_floats,
                    "plan needs " << state_floats << " partial-state floats, the workspace holds "
                                  << limits.max_state_floats);
  PREFIXD_CHECK_ARG(int64_t(plan_ints) <= limits.max_plan_ints,
                    "serialised plan has " << plan_ints << " ints, the workspace holds " << limits.max_plan_ints);
}

void CheckKvView(const KvPoolView& kv, int layer, const char* what) {
  kv.shape.Validate();
  PREFIXD_CHECK_ARG(kv.k != nullptr && kv.v != nullptr, what << ": KV pool pointer is null (k "
                                                            << kv.k << ", v " << kv.v << ")");
  PREFIXD_CHECK_ARG(layer >= 0 && layer < kv.shape.num_layers,
                    what << ": layer " << layer << " is outside the pool's " << kv.shape.num_layers << " layers");
}

void CheckCascadeArgs(const CascadePlan& plan, const CascadeArgs& args) {
  CheckKvView(args.kv, args.layer, "RunCascade");
  const KvPoolShape& s = args.kv.shape;
  // A KV head view (CascadeArgs::kv_head_count > 0) runs a plan made for that many heads over the
  // pool's heads [kv_head_offset, + kv_head_count).
  const int view_heads = args.kv_head_count > 0 ? args.kv_head_count : s.num_kv_heads;
  PREFIXD_CHECK_ARG(args.kv_head_count >= 0 && args.kv_head_offset >= 0 &&
                        (args.kv_head_count > 0 || args.kv_head_offset == 0) &&
                        args.kv_head_offset + view_heads <= s.num_kv_heads,
                    "RunCascade: KV head view [" << args.kv_head_offset << ", +" << args.kv_head_count
                                                 << ") is outside the pool's " << s.num_kv_heads << " KV heads");
  PREFIXD_CHECK_ARG(view_heads == plan.num_kv_heads && s.head_dim == plan.head_dim &&
                        s.page_size == plan.page_size && s.num_pages >= plan.num_pages,
                    "RunCascade: pool shape (H_kv " << view_heads << ", head_dim " << s.head_dim << ", page_size "
                                                    << s.page_size << ", " << s.num_pages
                                                    << " pages) does not match the loaded plan (H_kv "
                                                    << plan.num_kv_heads << ", head_dim " << plan.head_dim
                                                    << ", page_size " << plan.page_size << ", " << plan.num_pages
                                                    << " pages)");
  PREFIXD_CHECK_ARG(args.q != nullptr || plan.num_requests == 0, "RunCascade: q is null");
  PREFIXD_CHECK_ARG((args.merge_packed_row == nullptr) == (args.merge_packed_out == nullptr),
                    "RunCascade: merge_packed_row and merge_packed_out go together");
  ResolveSmScale(args.sm_scale, s.head_dim);
}

void CheckPrefixAttentionArgs(const PrefixAttentionArgs& args) {
  CheckKvView(args.kv, args.layer, "RunPrefixAttention");
  const KvPoolShape& s = args.kv.shape;
  PREFIXD_CHECK_ARG(args.num_queries >= 0, "RunPrefixAttention: negative num_queries " << args.num_queries);
  PREFIXD_CHECK_ARG(args.num_qo_heads > 0 && args.num_qo_heads % s.num_kv_heads == 0,
                    "RunPrefixAttention: num_qo_heads " << args.num_qo_heads << " is not a positive multiple of H_kv "
                                                        << s.num_kv_heads);
  PREFIXD_CHECK_ARG(args.prefix.num_tokens >= 0, "RunPrefixAttention: negative prefix length " << args.prefix.num_tokens);
  if (args.prefix.num_tokens > 0) {
    const int64_t pages = (int64_t(args.prefix.num_tokens) + s.page_size - 1) / s.page_size;
    PREFIXD_CHECK_ARG(args.prefix.first_page >= 0 && args.prefix.first_page + pages <= s.num_pages,
                      "RunPrefixAttention: prefix run of " << args.prefix.num_tokens << " tokens, pages ["
                                                           << args.prefix.first_page << ", "
                                                           << args.prefix.first_page + pages << "), is outside the pool's "
                                                           << s.num_pages << " pages");
  }
  PREFIXD_CHECK_ARG(!args.causal || args.q_offset >= 0, "RunPrefixAttention: negative q_offset " << args.q_offset);
  if (args.num_queries > 0)
    PREFIXD_CHECK_ARG(args.q != nullptr && args.v_out != nullptr && args.s_out != nullptr,
                      "RunPrefixAttention: null pointer (q " << args.q << ", v_out " << args.v_out << ", s_out "
                                                             << args.s_out << ")");
  ResolveSmScale(args.sm_scale, s.head_dim);
}

}  // namespace prefixd::kernels
