// 32-bit flags that GPUs of one host read and write in each other's memory (peer mappings): the
// PTX loads and stores at system scope, acquire/release where a flag publishes data written
// before it, relaxed where it only counts. Shared by the peer exchange and its probe
// (bench/comm/peer_probe.cu).
#pragma once

#include <cstdint>

namespace prefixd::comm {

#define PREFIXD_SYS_FLAG_STORE(name, sem)                                                   \
  __device__ __forceinline__ void name(uint32_t* flag, uint32_t value) {                     \
    asm volatile("st." sem ".sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory"); \
  }
#define PREFIXD_SYS_FLAG_LOAD(name, sem)                                                        \
  __device__ __forceinline__ uint32_t name(const uint32_t* flag) {                              \
    uint32_t value;                                                                              \
    asm volatile("ld." sem ".sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory"); \
    return value;                                                                                \
  }
PREFIXD_SYS_FLAG_STORE(StoreRelease, "release")
PREFIXD_SYS_FLAG_STORE(StoreRelaxed, "relaxed")
PREFIXD_SYS_FLAG_LOAD(LoadAcquire, "acquire")
PREFIXD_SYS_FLAG_LOAD(LoadRelaxed, "relaxed")
// A 64-bit word published by a 32-bit flag (relaxed: the flag's release/acquire orders it).
__device__ __forceinline__ void StoreRelaxed64(uint64_t* word, uint64_t value) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
}
__device__ __forceinline__ uint64_t LoadRelaxed64(const uint64_t* word) {
  uint64_t value;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(word) : "memory");
  return value;
}
#undef PREFIXD_SYS_FLAG_STORE
#undef PREFIXD_SYS_FLAG_LOAD

}  // namespace prefixd::comm
