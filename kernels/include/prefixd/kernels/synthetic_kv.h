// Deterministic synthetic K/V and queries, until a model runner exists (DESIGN.md, "Where do K and
// V come from?").
//
// The K/V of position i is a pure function of (hash of tokens[0..i], i, layer, head, d), and the
// query of a decode step a pure function of (hash of the sequence up to the token being decoded,
// its position, layer, head, d). Consequences the tests lean on:
//  - identical token prefixes give bit-identical KV, wherever and however the pages are placed,
//    so a shared (sharded) computation must equal the private, unshared one;
//  - only integer arithmetic (splitmix64) is involved, and every value is an integer in
//    [-128, 127] divided by 128, exactly representable in fp16 AND bf16, so the CPU backend and
//    the GPU write bit-identical pool contents (no libm, no rounding anywhere).
//
// One 64-bit hash feeds 8 consecutive elements (one byte each), so generating a 1M-token prefix
// of a 70B-shaped model on the GPU costs seconds, not minutes.
//
// The fill functions write straight into the backend's pool (device memory for CUDA): only the
// per-token hashes (8 bytes a token) travel from the host.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/kv_cache.h"

#if defined(__CUDACC__)
#define PREFIXD_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PREFIXD_HOST_DEVICE inline
#endif

namespace prefixd::kernels {

// What a synthetic value is for; part of the hash so that K, V and Q differ.
enum class SyntheticTensor : uint32_t { kKey = 1, kValue = 2, kQuery = 3 };

// The chain's starting value: the hash of the empty sequence.
constexpr uint64_t kEmptySequenceHash = 0x70726566697864ull;  // "prefixd"

PREFIXD_HOST_DEVICE uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Hash of tokens[0..i] from the hash of tokens[0..i-1] and token i.
PREFIXD_HOST_DEVICE uint64_t ChainHash(uint64_t previous, int32_t token) {
  return SplitMix64(previous ^ (uint64_t(uint32_t(token)) * 0xD6E8FEB86659FD93ull));
}

// The 64-bit word behind elements [8·(d/8), 8·(d/8) + 8) of one head of one tensor at one
// position; element d is its byte d % 8, read as a signed integer.
PREFIXD_HOST_DEVICE uint64_t SyntheticWord(uint64_t hash, int64_t pos, int layer, int head, int d,
                                           SyntheticTensor which) {
  const uint64_t where = (uint64_t(which) << 60) ^ (uint64_t(uint32_t(layer)) << 42) ^
                         (uint64_t(uint32_t(head)) << 24) ^ uint64_t(uint32_t(d >> 3));
  return SplitMix64(hash ^ SplitMix64(where ^ (uint64_t(pos) * 0xA24BAED4963EE407ull)));
}

// Byte `lane` (0..7) of a word as an integer in [-128, 127].
PREFIXD_HOST_DEVICE int SyntheticInt(uint64_t word, int lane) {
  return int(int8_t(uint8_t(word >> (8 * lane))));
}

// The value itself: integer / 128, in [-1, 1), exact in fp16 and bf16.
PREFIXD_HOST_DEVICE float SyntheticValue(uint64_t hash, int64_t pos, int layer, int head, int d,
                                         SyntheticTensor which) {
  return float(SyntheticInt(SyntheticWord(hash, pos, layer, head, d, which), d & 7)) * (1.0f / 128.0f);
}

// hashes[i] = hash of tokens[0..i], chained from `start` (the hash of whatever precedes tokens;
// kEmptySequenceHash for a document's first token).
std::vector<uint64_t> PrefixHashes(const int32_t* tokens, int64_t n, uint64_t start = kEmptySequenceHash);
inline std::vector<uint64_t> PrefixHashes(const std::vector<int32_t>& tokens,
                                          uint64_t start = kEmptySequenceHash) {
  return PrefixHashes(tokens.data(), int64_t(tokens.size()), start);
}
// Just the last one (the hash of the whole sequence); `start` for an empty sequence.
uint64_t SequenceHash(const int32_t* tokens, int64_t n, uint64_t start = kEmptySequenceHash);

// Tokens to be written: token i has hash hashes[i], position positions[i] (or pos_begin + i when
// positions is null) and goes to pool slot slots[i] (or slot_begin + i when slots is null; a
// prefix shard is one contiguous run of slots). Arrays are in the backend's memory.
struct SyntheticKvTokens {
  const uint64_t* hashes = nullptr;    // [n]
  const int64_t* positions = nullptr;  // [n] or null
  const int64_t* slots = nullptr;      // [n] or null
  int64_t n = 0;
  int64_t pos_begin = 0;
  int64_t slot_begin = 0;
  // Pool layer j receives synthetic layer first_layer + j, for j < pool layers (a reference pool
  // holding one layer of a deep model uses first_layer = that layer).
  int first_layer = 0;
};

// Writes K and V of every pool layer and KV head for the tokens into the pool. Asynchronous on
// the backend's stream (CUDA), or on `stream` where given (another stream of the backend's device;
// the CPU backend ignores it); the arrays must stay alive until the stream reaches it.
// Throws kInvalidArgument for slots outside the pool or negative positions (checked on the host
// when the arrays are host-visible, i.e. always for the CPU backend).
void FillSyntheticKv(Backend& backend, const KvPoolView& kv, const SyntheticKvTokens& tokens, void* stream = nullptr);

// Same, with host arrays: stages them in backend memory, fills, synchronises, frees. For
// admission-time fills (a whole prefix shard), not for the per-step hot path.
void FillSyntheticKvFromHost(Backend& backend, const KvPoolView& kv, const uint64_t* hashes,
                             const int64_t* positions, const int64_t* slots, int64_t n,
                             int64_t pos_begin = 0, int64_t slot_begin = 0, int first_layer = 0);

// Queries of n rows for one layer: row r is the token at positions[r] whose sequence hash is
// hashes[r]; q: [n][num_heads][head_dim] in dtype, backend memory. Asynchronous like above.
struct SyntheticQueries {
  const uint64_t* hashes = nullptr;    // [n] backend memory
  const int64_t* positions = nullptr;  // [n] backend memory
  int64_t n = 0;
  int num_heads = 0;
  int head_dim = 0;
  DType dtype = DType::kBFloat16;
  int layer = 0;
  void* q = nullptr;
};
void FillSyntheticQueries(Backend& backend, const SyntheticQueries& queries);

// Host-side twins (no backend): the dtype bits the fill functions write. For tests and for
// building oracles.
uint16_t SyntheticBits(DType dtype, uint64_t hash, int64_t pos, int layer, int head, int d,
                       SyntheticTensor which);

// Deterministic token ids in [0, vocab) for documents given by length only: token i of stream
// `stream_id` (a document id, or a request's generated tokens).
int32_t SyntheticToken(uint64_t stream_id, int64_t i, int32_t vocab = 128256);
std::vector<int32_t> SyntheticTokens(uint64_t stream_id, int64_t n, int32_t vocab = 128256);

}  // namespace prefixd::kernels
