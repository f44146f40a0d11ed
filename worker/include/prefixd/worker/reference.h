// The single-rank, unshared answer the distributed engine is checked against.
//
// For one request it builds a private pool holding one layer of the whole sequence (prefix tokens
// then suffix tokens, synthetic K/V) as ONE plain suffix: no shared prefix, no shards, no
// communication. It then runs the backend's cascade for the query of the last token. Identical
// tokens give identical K/V (synthetic_kv.h), so the distributed, shared, sharded computation
// must equal this to float rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::worker {

struct ReferenceShape {
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  int page_size = 16;
  kernels::DType dtype = kernels::DType::kBFloat16;
  float sm_scale = 0.f;
};

// v: [H_qo][D], s: [H_qo] (base 2) of the decode query of the sequence's last token at `layer`.
// Throws kInvalidArgument for an empty sequence. Allocates (and frees) about
// 2 · (|prefix| + |suffix|) · H_kv · D · 2 bytes of backend memory.
void ReferenceDecode(kernels::Backend& backend, const ReferenceShape& shape, const std::vector<int32_t>& prefix,
                     const std::vector<int32_t>& suffix, int layer, std::vector<float>* v, std::vector<float>* s);

}  // namespace prefixd::worker
