#include "ref/cpu_backend.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#include "prefixd/common/error.h"
#include "prefixd/kernels/state.h"
#include "src/backend_common.h"

namespace prefixd::kernels {
namespace ref {
namespace {

constexpr std::align_val_t kAlignment{64};

KvLayer LayerOf(const KvPoolView& kv, int layer) {
  const int64_t offset = int64_t(layer) * kv.shape.LayerStride();
  return KvLayer{static_cast<const uint16_t*>(kv.k) + offset, static_cast<const uint16_t*>(kv.v) + offset,
                 kv.shape.TokenStride(), kv.shape.head_dim, kv.shape.dtype};
}

void CheckCopy(const void* dst, const void* src, size_t bytes, const char* what) {
  PREFIXD_CHECK_ARG(bytes == 0 || (dst != nullptr && src != nullptr),
                    what << ": null pointer (dst " << dst << ", src " << src << ") for " << bytes << " bytes");
}

// True when [a, a + a_len) and [b, b + b_len) (floats) overlap.
bool Overlaps(const float* a, int64_t a_len, const float* b, int64_t b_len) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_len > 0 && b_len > 0 && pa < pb + uintptr_t(b_len) * sizeof(float) &&
         pb < pa + uintptr_t(a_len) * sizeof(float);
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options) : limits_(options.limits), scratch_(options.limits.max_head_dim) {
  PREFIXD_CHECK_ARG(limits_.max_requests > 0 && limits_.max_qo_heads > 0 && limits_.max_slots > 0 &&
                        limits_.max_plan_ints > 0,
                    "CPU backend: workspace limits must be positive");
  PREFIXD_CHECK_ARG(limits_.max_head_dim >= 64 && limits_.max_head_dim % 8 == 0,
                    "CPU backend: max_head_dim " << limits_.max_head_dim << " must be a multiple of 8, ≥ 64");
}

PlanOptions CpuBackend::DefaultPlanOptions() const {
  // One thread gains nothing from many items, but splitting must stay exercised wherever the CPU
  // backend stands in for a GPU (CI, the multi-rank tests), so split moderately long inputs.
  PlanOptions o;
  o.target_items = 16;
  o.prefix_tile_rows = kTileRows;
  o.prefix_chunk_align = 16;
  o.min_prefix_chunk = 128;
  o.decode_chunk_align = 16;
  o.min_decode_chunk = 128;
  return o;
}

void* CpuBackend::Alloc(size_t bytes) { return ::operator new(bytes, kAlignment); }

void CpuBackend::Free(void* ptr) {
  if (ptr != nullptr) ::operator delete(ptr, kAlignment);
}

void CpuBackend::CopyToDevice(void* dst, const void* src, size_t bytes) {
  CheckCopy(dst, src, bytes, "CopyToDevice");
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  CheckCopy(dst, src, bytes, "CopyToHost");
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::CopyDeviceToDevice(void* dst, const void* src, size_t bytes) {
  CheckCopy(dst, src, bytes, "CopyDeviceToDevice");
  if (bytes > 0) std::memmove(dst, src, bytes);
}

void CpuBackend::Fill(void* dst, uint8_t byte, size_t bytes) {
  PREFIXD_CHECK_ARG(bytes == 0 || dst != nullptr, "Fill: null pointer for " << bytes << " bytes");
  if (bytes > 0) std::memset(dst, byte, bytes);
}

void CpuBackend::LoadPlan(const CascadePlan& plan) {
  // Through the serialised form, as the CUDA backend does, so that form is exercised everywhere;
  // Deserialize also validates the plan's structure. A plan that fails leaves the old one loaded.
  const std::vector<int32_t> flat = plan.Serialize();
  CascadePlan loaded = CascadePlan::Deserialize(flat);
  CheckPlanFitsWorkspace(loaded, flat.size(), limits_);
  // NaN-filled, so that a slot no item writes (a planner bug) poisons the output it feeds.
  const size_t states = size_t(loaded.num_slots()) * loaded.num_qo_heads;
  partial_v_.assign(states * loaded.head_dim, std::numeric_limits<float>::quiet_NaN());
  partial_s_.assign(states, std::numeric_limits<float>::quiet_NaN());
  in_merge_.assign(size_t(loaded.num_requests), 0);
  for (const int32_t r : loaded.merge_requests) in_merge_[size_t(r)] = 1;
  has_decode_.assign(size_t(loaded.num_requests), 0);
  for (const DecodeWorkItem& it : loaded.decode_items) has_decode_[size_t(it.request)] = 1;
  plan_ = std::move(loaded);
  plan_loaded_ = true;
}

void CpuBackend::RunPrefixItems(const KvLayer& kv, const uint16_t* q, float scale_log2) {
  const int g = plan_.gqa_group_size(), num_heads = plan_.num_qo_heads, dim = plan_.head_dim;
  for (const PrefixWorkItem& item : plan_.prefix_items) {
    const PrefixGroup& grp = plan_.groups[item.group];
    const int64_t first_slot = int64_t(grp.prefix.first_page) * plan_.page_size;
    for (int32_t r0 = item.row_begin; r0 < item.row_end; r0 += kTileRows) {
      const int rows = std::min<int32_t>(kTileRows, item.row_end - r0);
      // Group-local row → (request, qo head): GQA heads of one KV head are stacked as rows.
      auto request_of = [&](int i) { return grp.first_request + (r0 + i) / g; };
      auto head_of = [&](int i) { return item.kv_head * g + (r0 + i) % g; };
      for (int i = 0; i < rows; ++i)
        LoadQueryRow(kv.dtype, q + (int64_t(request_of(i)) * num_heads + head_of(i)) * dim, dim, scale_log2,
                     scratch_.q(i));
      AttendTile(kv, item.kv_head, rows, item.kv_begin, item.kv_end, false,
                 [first_slot](int32_t t) { return first_slot + t; }, scratch_,
                 [&](int i, const float* v, float s) {
                   const int64_t state = int64_t(plan_.state_indptr[request_of(i)] + item.chunk) * num_heads + head_of(i);
                   std::copy_n(v, dim, &partial_v_[state * dim]);
                   partial_s_[state] = s;
                 });
    }
  }
}

void CpuBackend::RunDecodeItems(const KvLayer& kv, const uint16_t* q, float scale_log2) {
  const int g = plan_.gqa_group_size(), num_heads = plan_.num_qo_heads, dim = plan_.head_dim;
  const int page_size = plan_.page_size;
  const PageTable& table = plan_.suffix;
  for (const DecodeWorkItem& item : plan_.decode_items) {
    const int32_t r = item.request;
    const int64_t first_state = int64_t(plan_.state_indptr[r] + item.slot_offset) * num_heads;
    for (int h0 = 0; h0 < g; h0 += kTileRows) {
      const int rows = std::min(kTileRows, g - h0);
      const int head0 = item.kv_head * g + h0;
      for (int i = 0; i < rows; ++i)
        LoadQueryRow(kv.dtype, q + (int64_t(r) * num_heads + head0 + i) * dim, dim, scale_log2, scratch_.q(i));
      AttendTile(kv, item.kv_head, rows, item.kv_begin, item.kv_end, false,
                 [&table, r, page_size](int32_t t) { return table.Slot(r, t, page_size); }, scratch_,
                 [&](int i, const float* v, float s) {
                   const int64_t state = first_state + head0 + i;
                   std::copy_n(v, dim, &partial_v_[state * dim]);
                   partial_s_[state] = s;
                 });
    }
  }
}

void CpuBackend::RunCascadeParts(const CascadeArgs& args, unsigned parts) {
  PREFIXD_CHECK_ARG(plan_loaded_, "RunCascade: no plan loaded (call LoadPlan first)");
  CheckCascadeArgs(plan_, args);
  KvLayer kv = LayerOf(args.kv, args.layer);
  const int64_t head_view = int64_t(args.kv_head_offset) * args.kv.shape.head_dim;  // CascadeArgs: KV head view
  kv.k += head_view;
  kv.v += head_view;
  const float scale_log2 = ResolveSmScale(args.sm_scale, plan_.head_dim) * kLog2e;
  const auto* q = static_cast<const uint16_t*>(args.q);
  if (parts & kPrefixPart) RunPrefixItems(kv, q, scale_log2);
  // The decode part finishes the requests its items finish on the GPU (those outside
  // merge_requests), the merge part the others: the same ⊕ over the same slots either way.
  if (parts & kDecodePart) {
    RunDecodeItems(kv, q, scale_log2);
    for (int r = 0; r < plan_.num_requests; ++r)
      if (!in_merge_[size_t(r)]) FinishRequest(args, r, false);
  }
  for (const int32_t r : plan_.merge_requests)
    if (parts & (has_decode_[size_t(r)] ? kMergeAfterDecodePart : kMergeNoDecodePart)) FinishRequest(args, r, true);
}

void CpuBackend::FinishRequest(const CascadeArgs& args, int r, bool merge_part) {
  // n-ary ⊕ over the request's slots, per qo head; a request with no slots gets the empty state.
  const int num_heads = plan_.num_qo_heads, dim = plan_.head_dim;
  const int64_t slot_stride = int64_t(num_heads) * dim;
  float* tmp = scratch_.q(0);  // a D-float row when the caller wants no v_out
  const int32_t first = plan_.state_indptr[r], n = plan_.state_indptr[r + 1] - first;
  // CascadeArgs::merge_packed_row: the merge part writes this request's packed row instead.
  float* packed = merge_part && args.merge_packed_row != nullptr && args.merge_packed_row[r] >= 0
                      ? args.merge_packed_out + int64_t(args.merge_packed_row[r]) * num_heads * (dim + 1)
                      : nullptr;
  for (int h = 0; h < num_heads; ++h) {
    const int64_t row = int64_t(r) * num_heads + h;
    float* v = packed ? packed + int64_t(h) * dim : args.v_out ? args.v_out + row * dim : tmp;
    float s;
    // data() + offset, not &vec[offset]: a plan with no states at all leaves both vectors empty,
    // and a request with no slots (n = 0) reads nothing but may point one past their end.
    prefixd::kernels::MergeStates(partial_v_.data() + (first * num_heads + h) * int64_t(dim), slot_stride,
                                  partial_s_.data() + int64_t(first) * num_heads + h, num_heads, n, dim, v, &s);
    if (packed) {
      packed[int64_t(num_heads) * dim + h] = s;
      continue;
    }
    if (args.s_out) args.s_out[row] = s;
    if (args.o) {
      auto* o = static_cast<uint16_t*>(args.o) + row * dim;
      for (int d = 0; d < dim; ++d) o[d] = FromFloat(args.kv.shape.dtype, v[d]);
    }
  }
}

void CpuBackend::RunPrefixAttention(const PrefixAttentionArgs& args) {
  CheckPrefixAttentionArgs(args);
  const KvPoolShape& shape = args.kv.shape;
  PREFIXD_CHECK_ARG(shape.head_dim <= limits_.max_head_dim, "RunPrefixAttention: head_dim "
                                                                << shape.head_dim << " exceeds the workspace's "
                                                                << limits_.max_head_dim);
  if (args.num_queries == 0) return;
  const KvLayer kv = LayerOf(args.kv, args.layer);
  const float scale_log2 = ResolveSmScale(args.sm_scale, shape.head_dim) * kLog2e;
  const int num_heads = args.num_qo_heads, g = num_heads / shape.num_kv_heads, dim = shape.head_dim;
  const int32_t prefix_len = args.prefix.num_tokens;
  const int64_t first_slot = int64_t(args.prefix.first_page) * shape.page_size;
  const auto* q = static_cast<const uint16_t*>(args.q);
  const int64_t total_rows = int64_t(args.num_queries) * g;
  for (int kv_head = 0; kv_head < shape.num_kv_heads; ++kv_head) {
    for (int64_t r0 = 0; r0 < total_rows; r0 += kTileRows) {
      const int rows = int(std::min<int64_t>(kTileRows, total_rows - r0));
      auto query_of = [&](int i) { return (r0 + i) / g; };
      auto head_of = [&](int i) { return kv_head * g + int((r0 + i) % g); };
      for (int i = 0; i < rows; ++i) {
        LoadQueryRow(kv.dtype, q + (query_of(i) * num_heads + head_of(i)) * dim, dim, scale_log2, scratch_.q(i));
        // Causal: query i sits at position q_offset + i and sees tokens [0, q_offset + i].
        scratch_.row_end()[i] = int32_t(std::min<int64_t>(prefix_len, int64_t(args.q_offset) + query_of(i) + 1));
      }
      AttendTile(kv, kv_head, rows, 0, prefix_len, args.causal, [first_slot](int32_t t) { return first_slot + t; },
                 scratch_, [&](int i, const float* v, float s) {
                   const int64_t row = query_of(i) * num_heads + head_of(i);
                   std::copy_n(v, dim, args.v_out + row * dim);
                   args.s_out[row] = s;
                 });
    }
  }
}

void CpuBackend::MergeStates(const float* v_in, const float* s_in, int n, int rows, int head_dim, float* v_out,
                             float* s_out) {
  PREFIXD_CHECK_ARG(n >= 0 && rows >= 0 && head_dim > 0,
                    "MergeStates: bad sizes n " << n << ", rows " << rows << ", head_dim " << head_dim);
  if (rows == 0) return;
  PREFIXD_CHECK_ARG(v_out != nullptr && s_out != nullptr && (n == 0 || (v_in != nullptr && s_in != nullptr)),
                    "MergeStates: null pointer");
  const int64_t stride = int64_t(rows) * head_dim;
  PREFIXD_CHECK_ARG(!Overlaps(v_out, stride, v_in, n * stride) && !Overlaps(s_out, rows, s_in, int64_t(n) * rows),
                    "MergeStates: outputs overlap the inputs (use MergeStateInPlace)");
  for (int r = 0; r < rows; ++r)
    prefixd::kernels::MergeStates(v_in + int64_t(r) * head_dim, stride, s_in + r, rows, n, head_dim,
                                  v_out + int64_t(r) * head_dim, s_out + r);
}

void CpuBackend::MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                                   int head_dim) {
  PREFIXD_CHECK_ARG(rows >= 0 && head_dim > 0, "MergeStateInPlace: bad sizes rows " << rows << ", head_dim " << head_dim);
  if (rows == 0) return;
  PREFIXD_CHECK_ARG(v != nullptr && s != nullptr && v_other != nullptr && s_other != nullptr,
                    "MergeStateInPlace: null pointer");
  for (int r = 0; r < rows; ++r) {
    float* vr = v + int64_t(r) * head_dim;
    MergeState(vr, s[r], v_other + int64_t(r) * head_dim, s_other[r], head_dim, vr, s + r);
  }
}

void CpuBackend::CastStates(const float* v, int64_t count, DType dtype, void* out) {
  PREFIXD_CHECK_ARG(count >= 0, "CastStates: negative count " << count);
  if (count == 0) return;
  PREFIXD_CHECK_ARG(v != nullptr && out != nullptr, "CastStates: null pointer");
  auto* o = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < count; ++i) o[i] = FromFloat(dtype, v[i]);
}

}  // namespace ref

std::unique_ptr<Backend> MakeCpuBackend(const BackendOptions& options) {
  return std::make_unique<ref::CpuBackend>(options);
}

}  // namespace prefixd::kernels
