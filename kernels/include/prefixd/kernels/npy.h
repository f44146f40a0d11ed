// Real K/V tensors from NumPy .npy files (format versions 1.0, 2.0 and 3.0), with shape and dtype
// checks, and the copy of such tensors into a KV pool.
//
// A K (or V) tensor for one layer is [tokens][kv_heads][head_dim], C order, in one of
//   '<f2' (fp16), '<f4' (fp32, rounded to the pool's dtype), or 2-byte raw bits ('<u2', '<i2',
//   '|V2': how bfloat16 arrays from ml_dtypes / torch are usually saved) taken as the pool's dtype.
// Anything else (big-endian data, Fortran order, a shape that does not match, a file shorter or
// longer than its header says, a malformed header) is refused with an error naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::kernels {

struct NpyArray {
  std::string descr;             // e.g. "<f2"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  int item_size = 0;             // bytes per element, from descr
  std::vector<uint8_t> data;     // raw bytes as stored (little-endian)
  int64_t num_elements() const;
};

// `name` labels errors (a file name). Throws kInvalidArgument for malformed contents.
NpyArray ParseNpy(const uint8_t* bytes, size_t size, const std::string& name);
// Throws kNotFound when the file cannot be read.
NpyArray LoadNpy(const std::string& path);
// A version 1.0 file of the given descr and shape (for tests and tools).
std::vector<uint8_t> EncodeNpy(const std::string& descr, const std::vector<int64_t>& shape, const void* data);
void SaveNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data);

// The array as [tokens][kv_heads][head_dim] elements of `dtype` (bits), after the checks above.
// tokens < 0 accepts any token count.
std::vector<uint16_t> NpyToKv(const NpyArray& array, const std::string& name, int64_t tokens, int kv_heads,
                              int head_dim, DType dtype);

// Copies n tokens of one layer's K and V (host, [n][H_kv][D] bits of the pool's dtype) into pool
// slots [slot_begin, slot_begin + n) of `layer` (one contiguous copy per array).
void CopyKvToPool(Backend& backend, const KvPoolView& kv, int layer, int64_t slot_begin, int64_t n,
                  const uint16_t* k, const uint16_t* v);

}  // namespace prefixd::kernels
