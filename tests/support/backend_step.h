// Shared by the CPU and GPU backend tests: backend-owned buffers, one cascade step run on a
// backend and read back, queries for a decode batch (flat or peaky), and RunPrefixAttention cases
// with their float64 oracle.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/plan.h"
#include "support/test_support.h"

namespace prefixd::test {

// Backend-owned buffers, freed at scope exit (after a Synchronize); fresh ones are poisoned with
// NaN (0xFF bytes).
class BackendBuffers {
 public:
  explicit BackendBuffers(kernels::Backend& backend) : backend_(backend) {}
  ~BackendBuffers();
  BackendBuffers(const BackendBuffers&) = delete;
  BackendBuffers& operator=(const BackendBuffers&) = delete;
  void* Upload(const void* src, size_t bytes);
  void* Poisoned(size_t bytes);
  template <typename T>
  std::vector<T> Download(const void* src, size_t count) {
    std::vector<T> out(count);
    backend_.Synchronize();
    backend_.CopyToHost(out.data(), src, count * sizeof(T));
    return out;
  }

 private:
  kernels::Backend& backend_;
  std::vector<void*> owned_;
};

// One step's outputs on the host: o [rows][D] converted to float, v_out [rows][D], s_out [rows].
struct StepResult {
  std::vector<float> o, v, s;
};

// Expects rows [first_row, end_row) of `got` to hold the empty state exactly: o = 0, v = 0,
// s = −inf (a request with nothing to attend to; poison or NaN fails).
void ExpectEmptyStates(const StepResult& got, int64_t first_row, int64_t end_row, int head_dim);

// Arguments of one cascade step with the pool and queries uploaded to `mem`'s backend and the
// outputs poisoned (each with one spare element); rows = B · H_qo.
kernels::CascadeArgs StepArgs(BackendBuffers& mem, const HostKvPool& pool, int layer, const std::vector<uint16_t>& q,
                              int64_t rows);
// Reads back the outputs of StepArgs' step.
StepResult DownloadStep(BackendBuffers& mem, const kernels::CascadeArgs& args, DType dtype, int64_t rows,
                        int head_dim);
// LoadPlan, RunCascade and read back, on fresh buffers.
StepResult RunStep(kernels::Backend& backend, const HostKvPool& pool, int layer, const kernels::CascadePlan& plan,
                   const std::vector<uint16_t>& q);

// Runs `plan` whole and in parts (prefix, decode and merge as three calls; and, where the plan
// allows it, prefix + merge before decode: Backend::RunCascadeParts), each into fresh poisoned
// outputs, and expects the bits of the whole run from every order. Returns the whole run.
StepResult ExpectCascadePartsMatchWhole(kernels::Backend& backend, const HostKvPool& pool, int layer,
                                        const kernels::CascadePlan& plan, const std::vector<uint16_t>& q);

// Runs `plan` whole, then in parts with the merge part writing packed rows
// (CascadeArgs::merge_packed_row: every merge request, in reverse order), and expects each packed
// row [v | s] to hold the bits of that request's whole-run state, the merge requests' ordinary
// outputs left as they were (poison), and every other request's outputs as in the whole run.
void ExpectMergePartPacksRows(kernels::Backend& backend, const HostKvPool& pool, int layer,
                              const kernels::CascadePlan& plan, const std::vector<uint16_t>& q);

std::vector<double> ToDouble(const std::vector<float>& x);

// Rows planted with a key by MakeQueries: (request r, head h) with h % 3 == r % 3.
bool Planted(int request, int head);

// Random queries [B][H_qo][D] for a batch. Flat: uniform in [-1, 1]. Peaky: uniform in
// [-peaky_scale, peaky_scale] (score std = peaky_scale/3 under sm_scale = 1/sqrt(D), k in [-1, 1]),
// and every Planted row aims at a random slot of its request (PlantKey, gain 33).
std::vector<uint16_t> MakeQueries(std::mt19937_64& rng, const HostKvPool& pool, int layer,
                                  const kernels::DecodeBatch& batch, bool peaky, float peaky_scale);

// ---- RunPrefixAttention (prefill / append): causal with q_offset, and non-causal ----

struct PrefixCase {
  std::string name;
  DType dtype;
  int num_qo_heads, num_kv_heads, head_dim, page_size;
  int prefix_tokens, num_queries, q_offset;
  bool causal, peaky;
};

inline void PrintTo(const PrefixCase& c, std::ostream* os) { *os << c.name; }

// The case's prefix lies in pages [first_page, …) of a 2-layer pool with one spare page after it,
// and the queries read layer 1.
struct PrefixProblem {
  static constexpr int kFirstPage = 2, kLayer = 1;
  HostKvPool pool;
  std::vector<uint16_t> q;  // [num_queries][H_qo][D]
};
// Random pool and queries: uniform in [-1, 1], or when peaky in [-peaky_scale, peaky_scale] with
// head 0 of every query aimed at a visible key.
PrefixProblem MakePrefixProblem(std::mt19937_64& rng, const PrefixCase& c, float peaky_scale);
// RunPrefixAttention on `backend` (StepResult::o stays empty).
StepResult RunPrefixCase(kernels::Backend& backend, const PrefixCase& c, const PrefixProblem& p);
// Float64 oracle: v [num_queries·H_qo][D], s [num_queries·H_qo].
RefOutput NaivePrefixCase(const PrefixCase& c, const PrefixProblem& p);

}  // namespace prefixd::test
