// A growable buffer in a backend's memory (device memory for CUDA). Reserve() reallocates only
// when asked for more than it holds, and never inside a layer loop: the worker reserves
// everything a step needs before its first layer, so steady-state steps do not allocate.
// Made with a Comm, it is an exchange buffer: its memory comes from Comm::AllocRegistered where
// the Comm offers it (NCCL: registered for zero-copy transfers), from the backend otherwise.
#pragma once

#include <cstddef>
#include <utility>

#include "prefixd/comm/comm.h"
#include "prefixd/kernels/backend.h"

namespace prefixd::worker {

class BackendBuffer {
 public:
  BackendBuffer() = default;
  explicit BackendBuffer(kernels::Backend* backend, comm::Comm* exchange = nullptr)
      : backend_(backend), exchange_(exchange) {}
  ~BackendBuffer() { Reset(); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  BackendBuffer(BackendBuffer&& other) noexcept { *this = std::move(other); }
  BackendBuffer& operator=(BackendBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      backend_ = other.backend_;
      exchange_ = other.exchange_;
      ptr_ = other.ptr_;
      bytes_ = other.bytes_;
      registered_ = other.registered_;
      other.ptr_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }

  // Contents are undefined after a reallocation; new memory is zeroed (so that a benchmark that
  // skips the collectives never reads uninitialised floats).
  void Reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    Reset();
    ptr_ = exchange_ != nullptr ? exchange_->AllocRegistered(bytes) : nullptr;
    registered_ = ptr_ != nullptr;
    if (!registered_) ptr_ = backend_->Alloc(bytes);
    bytes_ = bytes;
    backend_->Fill(ptr_, 0, bytes);
  }
  void Reset() {
    if (ptr_ != nullptr) {
      if (registered_) exchange_->FreeRegistered(ptr_);
      else backend_->Free(ptr_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
    registered_ = false;
  }
  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  kernels::Backend* backend_ = nullptr;
  comm::Comm* exchange_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  bool registered_ = false;  // ptr_ came from exchange_->AllocRegistered
};

}  // namespace prefixd::worker
