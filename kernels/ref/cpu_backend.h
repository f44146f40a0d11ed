// The CPU backend (internal to kernels/; users call MakeCpuBackend): host memory, plain float
// loops, the same plan as the GPU. It is the ground truth the CUDA backend and the distributed
// engine are tested against, and the backend CI runs, so it stays simple and single-threaded
// (several MPI ranks share a small machine).
#pragma once

#include <vector>

#include "prefixd/kernels/backend.h"
#include "ref/ref_attention.h"

namespace prefixd::kernels::ref {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string Describe() const override { return "cpu (reference, 1 thread)"; }
  PlanOptions DefaultPlanOptions() const override;
  const WorkspaceLimits& limits() const override { return limits_; }

  void* Alloc(size_t bytes) override;
  void Free(void* ptr) override;
  void CopyToDevice(void* dst, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const void* src, size_t bytes) override;
  void CopyDeviceToDevice(void* dst, const void* src, size_t bytes) override;
  void Fill(void* dst, uint8_t byte, size_t bytes) override;
  void Synchronize() override {}
  void* stream() const override { return nullptr; }

  void LoadPlan(const CascadePlan& plan) override;
  void RunCascade(const CascadeArgs& args) override { RunCascadeParts(args, kAllParts); }
  void RunCascadeParts(const CascadeArgs& args, unsigned parts) override;
  void RunPrefixAttention(const PrefixAttentionArgs& args) override;

  void MergeStates(const float* v_in, const float* s_in, int n, int rows, int head_dim, float* v_out,
                   float* s_out) override;
  void MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                         int head_dim) override;
  void CastStates(const float* v, int64_t count, DType dtype, void* out) override;

 private:
  void RunPrefixItems(const KvLayer& kv, const uint16_t* q, float scale_log2);
  void RunDecodeItems(const KvLayer& kv, const uint16_t* q, float scale_log2);
  // n-ary ⊕ over the slots of request r into the outputs (the merge part: or its packed row,
  // CascadeArgs::merge_packed_row).
  void FinishRequest(const CascadeArgs& args, int r, bool merge_part);

  WorkspaceLimits limits_;
  bool plan_loaded_ = false;
  CascadePlan plan_;
  // Partial states of the loaded plan: v [num_slots][H_qo][D], s [num_slots][H_qo]. Sized by
  // LoadPlan (capacity only grows), so RunCascade never allocates.
  std::vector<float> partial_v_, partial_s_;
  std::vector<char> in_merge_;  // [num_requests]: in plan_.merge_requests (finished by the merge part)
  std::vector<char> has_decode_;  // [num_requests]: has decode items (merged by kMergeAfterDecodePart)
  TileScratch scratch_;
};

}  // namespace prefixd::kernels::ref
