#include "prefixd/kernels/synthetic_kv.h"

#include <algorithm>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

#if defined(PREFIXD_HAVE_CUDA)
namespace cuda {
// kernels/cuda/synthetic_kv.cu: the same loops as below, one thread per 8 elements.
void LaunchFillSyntheticKv(const KvPoolView& kv, const SyntheticKvTokens& tokens, void* stream);
void LaunchFillSyntheticQueries(const SyntheticQueries& queries, void* stream);
}  // namespace cuda
#endif

namespace {

void CheckTokens(const KvPoolView& kv, const SyntheticKvTokens& t) {
  kv.shape.Validate();
  PREFIXD_CHECK_ARG(kv.k != nullptr && kv.v != nullptr, "FillSyntheticKv: KV pool pointer is null");
  PREFIXD_CHECK_ARG(t.n >= 0, "FillSyntheticKv: negative token count " << t.n);
  PREFIXD_CHECK_ARG(t.n == 0 || t.hashes != nullptr, "FillSyntheticKv: hashes is null for " << t.n << " tokens");
  PREFIXD_CHECK_ARG(t.first_layer >= 0, "FillSyntheticKv: negative first_layer " << t.first_layer);
  const int64_t num_slots = int64_t(kv.shape.num_pages) * kv.shape.page_size;
  if (t.slots == nullptr)
    PREFIXD_CHECK_ARG(t.slot_begin >= 0 && t.slot_begin + t.n <= num_slots,
                      "FillSyntheticKv: slots [" << t.slot_begin << ", " << t.slot_begin + t.n
                                                 << ") are outside the pool's " << num_slots << " slots");
  if (t.positions == nullptr)
    PREFIXD_CHECK_ARG(t.pos_begin >= 0, "FillSyntheticKv: negative first position " << t.pos_begin);
}

// Host-array checks (only valid where the arrays are host memory).
void CheckHostArrays(const KvPoolShape& shape, const int64_t* positions, const int64_t* slots, int64_t n) {
  const int64_t num_slots = int64_t(shape.num_pages) * shape.page_size;
  for (int64_t i = 0; i < n; ++i) {
    if (slots != nullptr)
      PREFIXD_CHECK_ARG(slots[i] >= 0 && slots[i] < num_slots,
                        "FillSyntheticKv: token " << i << " goes to slot " << slots[i] << ", outside the pool's "
                                                  << num_slots << " slots");
    if (positions != nullptr)
      PREFIXD_CHECK_ARG(positions[i] >= 0, "FillSyntheticKv: token " << i << " has negative position " << positions[i]);
  }
}

void FillSyntheticKvCpu(const KvPoolView& kv, const SyntheticKvTokens& t) {
  const KvPoolShape& s = kv.shape;
  auto* k = static_cast<uint16_t*>(kv.k);
  auto* v = static_cast<uint16_t*>(kv.v);
  for (int64_t i = 0; i < t.n; ++i) {
    const int64_t pos = t.positions ? t.positions[i] : t.pos_begin + i;
    const int64_t slot = t.slots ? t.slots[i] : t.slot_begin + i;
    for (int layer = 0; layer < s.num_layers; ++layer)
      for (int h = 0; h < s.num_kv_heads; ++h) {
        const int64_t off = s.Offset(layer, slot, h);
        for (int d0 = 0; d0 < s.head_dim; d0 += 8) {  // one word per 8 elements (head_dim % 8 == 0)
          const uint64_t wk = SyntheticWord(t.hashes[i], pos, t.first_layer + layer, h, d0, SyntheticTensor::kKey);
          const uint64_t wv = SyntheticWord(t.hashes[i], pos, t.first_layer + layer, h, d0, SyntheticTensor::kValue);
          for (int lane = 0; lane < 8; ++lane) {
            k[off + d0 + lane] = FromFloat(s.dtype, float(SyntheticInt(wk, lane)) * (1.0f / 128.0f));
            v[off + d0 + lane] = FromFloat(s.dtype, float(SyntheticInt(wv, lane)) * (1.0f / 128.0f));
          }
        }
      }
  }
}

void FillSyntheticQueriesCpu(const SyntheticQueries& q) {
  auto* out = static_cast<uint16_t*>(q.q);
  for (int64_t r = 0; r < q.n; ++r)
    for (int h = 0; h < q.num_heads; ++h)
      for (int d = 0; d < q.head_dim; ++d)
        out[(r * q.num_heads + h) * q.head_dim + d] =
            SyntheticBits(q.dtype, q.hashes[r], q.positions[r], q.layer, h, d, SyntheticTensor::kQuery);
}

}  // namespace

std::vector<uint64_t> PrefixHashes(const int32_t* tokens, int64_t n, uint64_t start) {
  PREFIXD_CHECK_ARG(n >= 0 && (n == 0 || tokens != nullptr), "PrefixHashes: bad token array (n = " << n << ")");
  std::vector<uint64_t> out(n);
  uint64_t h = start;
  for (int64_t i = 0; i < n; ++i) out[i] = h = ChainHash(h, tokens[i]);
  return out;
}

uint64_t SequenceHash(const int32_t* tokens, int64_t n, uint64_t start) {
  PREFIXD_CHECK_ARG(n >= 0 && (n == 0 || tokens != nullptr), "SequenceHash: bad token array (n = " << n << ")");
  uint64_t h = start;
  for (int64_t i = 0; i < n; ++i) h = ChainHash(h, tokens[i]);
  return h;
}

uint16_t SyntheticBits(DType dtype, uint64_t hash, int64_t pos, int layer, int head, int d, SyntheticTensor which) {
  // Exact: the value is an integer / 128 with |integer| ≤ 128, representable in both dtypes.
  return FromFloat(dtype, SyntheticValue(hash, pos, layer, head, d, which));
}

int32_t SyntheticToken(uint64_t stream_id, int64_t i, int32_t vocab) {
  PREFIXD_CHECK_ARG(vocab > 0, "SyntheticToken: vocab must be positive, got " << vocab);
  return int32_t(SplitMix64(SplitMix64(stream_id ^ 0x746F6B656E73ull) + uint64_t(i)) % uint64_t(vocab));
}

std::vector<int32_t> SyntheticTokens(uint64_t stream_id, int64_t n, int32_t vocab) {
  PREFIXD_CHECK_ARG(n >= 0, "SyntheticTokens: negative length " << n);
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = SyntheticToken(stream_id, i, vocab);
  return out;
}

void FillSyntheticKv(Backend& backend, const KvPoolView& kv, const SyntheticKvTokens& tokens, void* stream) {
  CheckTokens(kv, tokens);
  if (tokens.n == 0) return;
  if (backend.kind() == BackendKind::kCpu) {
    CheckHostArrays(kv.shape, tokens.positions, tokens.slots, tokens.n);
    FillSyntheticKvCpu(kv, tokens);
    return;
  }
#if defined(PREFIXD_HAVE_CUDA)
  cuda::LaunchFillSyntheticKv(kv, tokens, stream != nullptr ? stream : backend.stream());
#else
  PREFIXD_THROW(ErrorKind::kUnsupported, "FillSyntheticKv: backend " << backend.Describe()
                                                                      << " is not supported by this build");
#endif
}

void FillSyntheticKvFromHost(Backend& backend, const KvPoolView& kv, const uint64_t* hashes, const int64_t* positions,
                             const int64_t* slots, int64_t n, int64_t pos_begin, int64_t slot_begin, int first_layer) {
  SyntheticKvTokens t;
  t.hashes = hashes;
  t.positions = positions;
  t.slots = slots;
  t.n = n;
  t.pos_begin = pos_begin;
  t.slot_begin = slot_begin;
  t.first_layer = first_layer;
  CheckTokens(kv, t);
  CheckHostArrays(kv.shape, positions, slots, n);
  if (n == 0) return;
  if (backend.kind() == BackendKind::kCpu) {
    FillSyntheticKvCpu(kv, t);
    return;
  }
  // Stage the arrays in one backend allocation: hashes, then positions, then slots.
  const size_t bytes = size_t(n) * 8 * (1 + (positions ? 1 : 0) + (slots ? 1 : 0));
  auto* staging = static_cast<uint8_t*>(backend.Alloc(bytes));
  try {
    uint8_t* p = staging;
    backend.CopyToDevice(p, hashes, size_t(n) * 8);
    t.hashes = reinterpret_cast<const uint64_t*>(p);
    p += size_t(n) * 8;
    if (positions) {
      backend.CopyToDevice(p, positions, size_t(n) * 8);
      t.positions = reinterpret_cast<const int64_t*>(p);
      p += size_t(n) * 8;
    }
    if (slots) {
      backend.CopyToDevice(p, slots, size_t(n) * 8);
      t.slots = reinterpret_cast<const int64_t*>(p);
    }
    FillSyntheticKv(backend, kv, t);
    backend.Synchronize();
  } catch (...) {
    backend.Free(staging);
    throw;
  }
  backend.Free(staging);
}

void FillSyntheticQueries(Backend& backend, const SyntheticQueries& q) {
  PREFIXD_CHECK_ARG(q.n >= 0 && q.num_heads > 0 && q.head_dim > 0 && q.head_dim % 8 == 0 && q.layer >= 0,
                    "FillSyntheticQueries: bad shape (n " << q.n << ", heads " << q.num_heads << ", head_dim "
                                                          << q.head_dim << ", layer " << q.layer << ")");
  if (q.n == 0) return;
  PREFIXD_CHECK_ARG(q.hashes != nullptr && q.positions != nullptr && q.q != nullptr,
                    "FillSyntheticQueries: null array for " << q.n << " rows");
  if (backend.kind() == BackendKind::kCpu) {
    FillSyntheticQueriesCpu(q);
    return;
  }
#if defined(PREFIXD_HAVE_CUDA)
  cuda::LaunchFillSyntheticQueries(q, backend.stream());
#else
  PREFIXD_THROW(ErrorKind::kUnsupported, "FillSyntheticQueries: backend " << backend.Describe()
                                                                           << " is not supported by this build");
#endif
}

}  // namespace prefixd::kernels
