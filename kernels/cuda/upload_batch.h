// UploadBatch: a step's small host → device copies, collected and then done by one kernel that
// reads the pinned host memory over the bus, instead of one copy-engine transfer each.
//
// Why: a decode step starts with a few small uploads (the decoded tokens, the plan's work lists,
// the per-step query metadata). Traced on an H200 (bench/trace/, bench/scaling/README.md session
// 6), each cudaMemcpyAsync of a few KiB took 1.4-4 µs plus 2-6 µs of gap behind the previous
// operation of the stream: ~18 µs of every step's critical path for three copies. One kernel that
// loads all of them at once costs one launch and one bus round trip.
//
// Pinned memory (cudaHostAlloc) is mapped into the device's address space under unified
// addressing; Add() asks the runtime for the device-side address and refuses anything else
// (pageable memory, device memory), which then goes to cudaMemcpyAsync as before.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace prefixd::kernels::cuda {

class UploadBatch {
 public:
  static constexpr int kMaxCopies = 16;
  // Larger copies stream faster through the copy engine than through SM loads over the bus.
  static constexpr size_t kMaxCopyBytes = size_t(1) << 20;

  // Queues a copy; false when it does not qualify (too large, src not pinned host memory) or the
  // batch is full: the caller launches the batch and/or copies it the usual way.
  bool Add(void* dst, const void* src, size_t bytes);
  bool full() const { return n_ == kMaxCopies; }
  bool empty() const { return n_ == 0; }
  // One kernel on `stream` doing every queued copy; the batch is empty afterwards. The host
  // memory must stay unchanged until the stream has passed the kernel (as for cudaMemcpyAsync).
  void Launch(cudaStream_t stream);
  // Whether Launch makes a programmatic dependent launch (upload_batch.cu says why; on by default).
  void set_programmatic(bool on) { programmatic_ = on; }

  struct Copies {  // the kernel's parameter
    int n = 0;
    uint8_t* dst[kMaxCopies];
    const uint8_t* src[kMaxCopies];
    uint32_t unit_shift[kMaxCopies];  // 4: 16-byte units (both ends aligned, size a multiple); 0: bytes
    uint32_t first_unit[kMaxCopies + 1];  // prefix sums of the copies' units
  };

 private:
  Copies copies_{};
  int n_ = 0;
  bool programmatic_ = true;
};

// PREFIXD_STEP_PDL=0|1 (default 1): whether a step's first kernels (the upload batch, then the
// synthetic queries that read it) are programmatic dependent launches. Throws kInvalidArgument on
// any other value. The one reader of that variable.
bool StepPdlEnabled();

}  // namespace prefixd::kernels::cuda
