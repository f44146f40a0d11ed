#include "prefixd/worker/worker_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "prefixd/common/env.h"
#include "prefixd/common/error.h"

namespace prefixd::worker {

#if defined(PREFIXD_HAVE_CUDA)
namespace cuda {  // worker/cuda/worker_ops.cu
void GatherRows(void* stream, void* dst, const void* remote, const void* local, const int32_t* idx, int rows,
                int row_words, uint32_t fill);
void PackStates(void* stream, const float* v, const float* s, const int32_t* idx, int rows, int heads, int head_dim,
                float* out);
void UnpackStates(void* stream, const float* packed, const float* v_local, const float* s_local, const int32_t* idx,
                  int n, int rows, int heads, int head_dim, float* v_in, float* s_in);
void MergeExchangedStates(void* stream, const float* packed, const float* v_local, const float* s_local,
                          const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_out, float* s_out);
void TreeScaleStates(void* stream, const float* v, const float* s, const float* s_max, const int32_t* m_pos,
                     const int32_t* dst, int rows, int heads, int head_dim, float* out);
void TreeFinishStates(void* stream, const float* sums, const float* s_max, const int32_t* m_pos, int rows, int heads,
                      int head_dim, float* v_out, float* s_out);
}  // namespace cuda
#define PREFIXD_WORKER_DISPATCH(backend, call)               \
  do {                                                       \
    if ((backend).kind() == kernels::BackendKind::kCuda) {   \
      cuda::call;                                            \
      return;                                                \
    }                                                        \
  } while (0)
#else
#define PREFIXD_WORKER_DISPATCH(backend, call)                                                   \
  do {                                                                                           \
    PREFIXD_CHECK_ARG((backend).kind() == kernels::BackendKind::kCpu,                            \
                      "worker ops: backend " << (backend).Describe() << " is not in this build"); \
  } while (0)
#endif

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

void GatherRows(kernels::Backend& backend, void* dst, const void* remote, const void* local, const int32_t* idx,
                int rows, int row_words, uint32_t fill) {
  if (rows <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend, GatherRows(backend.stream(), dst, remote, local, idx, rows, row_words, fill));
  auto* out = static_cast<uint32_t*>(dst);
  const auto* a = static_cast<const uint32_t*>(remote);
  const auto* b = static_cast<const uint32_t*>(local);
  for (int r = 0; r < rows; ++r) {
    uint32_t* o = out + int64_t(r) * row_words;
    const int32_t i = idx[r];
    if (i == -1) {
      for (int w = 0; w < row_words; ++w) o[w] = fill;
    } else {
      const uint32_t* src = i >= 0 ? a + int64_t(i) * row_words : b + int64_t(-2 - i) * row_words;
      std::memcpy(o, src, size_t(row_words) * 4);
    }
  }
}

void PackStates(kernels::Backend& backend, const float* v, const float* s, const int32_t* idx, int rows, int heads,
                int head_dim, float* out) {
  if (rows <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend, PackStates(backend.stream(), v, s, idx, rows, heads, head_dim, out));
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = 0; r < rows; ++r) {
    std::memcpy(out + r * row, v + idx[r] * vw, size_t(vw) * 4);
    std::memcpy(out + r * row + vw, s + int64_t(idx[r]) * heads, size_t(heads) * 4);
  }
}

void UnpackStates(kernels::Backend& backend, const float* packed, const float* v_local, const float* s_local,
                  const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_in, float* s_in) {
  if (rows <= 0 || n <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend,
                          UnpackStates(backend.stream(), packed, v_local, s_local, idx, n, rows, heads, head_dim, v_in, s_in));
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int64_t kj = 0; kj < int64_t(n) * rows; ++kj) {
    const int32_t i = idx[kj];
    float* vo = v_in + kj * vw;
    float* so = s_in + kj * heads;
    if (i == -1) {
      for (int64_t e = 0; e < vw; ++e) vo[e] = 0.f;
      for (int h = 0; h < heads; ++h) so[h] = kNegInf;
    } else if (i >= 0) {
      std::memcpy(vo, packed + i * row, size_t(vw) * 4);
      std::memcpy(so, packed + i * row + vw, size_t(heads) * 4);
    } else {
      std::memcpy(vo, v_local + int64_t(-2 - i) * vw, size_t(vw) * 4);
      std::memcpy(so, s_local + int64_t(-2 - i) * heads, size_t(heads) * 4);
    }
  }
}

void MergeExchangedStates(kernels::Backend& backend, const float* packed, const float* v_local, const float* s_local,
                          const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_out, float* s_out) {
  if (rows <= 0 || n <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend, MergeExchangedStates(backend.stream(), packed, v_local, s_local, idx, n, rows,
                                                        heads, head_dim, v_out, s_out));
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int j = 0; j < rows; ++j)
    for (int h = 0; h < heads; ++h) {
      auto v_of = [&](int32_t i) {
        return i >= 0 ? packed + i * row + int64_t(h) * head_dim : v_local + int64_t(-2 - i) * vw + int64_t(h) * head_dim;
      };
      auto s_of = [&](int32_t i) {
        return i == -1 ? kNegInf : i >= 0 ? packed[i * row + vw + h] : s_local[int64_t(-2 - i) * heads + h];
      };
      float m = kNegInf;
      for (int k = 0; k < n; ++k) m = std::max(m, s_of(idx[int64_t(k) * rows + j]));
      float* vo = v_out + (int64_t(j) * heads + h) * head_dim;
      for (int d = 0; d < head_dim; ++d) vo[d] = 0.f;
      if (m == kNegInf) {
        s_out[int64_t(j) * heads + h] = kNegInf;
        continue;
      }
      float sum_w = 0.f;
      for (int k = 0; k < n; ++k) {
        const int32_t i = idx[int64_t(k) * rows + j];
        const float w = std::exp2(s_of(i) - m);  // 0 for the empty state: its v is never read
        if (w == 0.f) continue;
        sum_w += w;
        const float* vi = v_of(i);
        for (int d = 0; d < head_dim; ++d) vo[d] += w * vi[d];
      }
      const float inv = 1.f / sum_w;  // sum_w ≥ 1: the max state's weight is 1
      for (int d = 0; d < head_dim; ++d) vo[d] *= inv;
      s_out[int64_t(j) * heads + h] = m + std::log2(sum_w);
    }
}

void TreeScaleStates(kernels::Backend& backend, const float* v, const float* s, const float* s_max,
                     const int32_t* m_pos, const int32_t* dst, int rows, int heads, int head_dim, float* out) {
  if (rows <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend, TreeScaleStates(backend.stream(), v, s, s_max, m_pos, dst, rows, heads, head_dim, out));
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = 0; r < rows; ++r) {
    float* o = out + int64_t(dst[r]) * row;
    for (int h = 0; h < heads; ++h) {
      const float x = s[int64_t(r) * heads + h], m = s_max[int64_t(m_pos[r]) * heads + h];
      // m is the max over ranks, so x ≤ m; x = −inf (nothing here) weighs 0, also when m is −inf.
      const float w = x == kNegInf ? 0.f : std::exp2(x - m);
      for (int d = 0; d < head_dim; ++d) o[h * head_dim + d] = w * v[r * vw + h * head_dim + d];
      o[vw + h] = w;
    }
  }
}

void TreeFinishStates(kernels::Backend& backend, const float* sums, const float* s_max, const int32_t* m_pos, int rows,
                      int heads, int head_dim, float* v_out, float* s_out) {
  if (rows <= 0) return;
  PREFIXD_WORKER_DISPATCH(backend, TreeFinishStates(backend.stream(), sums, s_max, m_pos, rows, heads, head_dim, v_out, s_out));
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = 0; r < rows; ++r) {
    const float* in = sums + r * row;
    for (int h = 0; h < heads; ++h) {
      const float den = in[vw + h];
      const float inv = den > 0.f ? 1.f / den : 0.f;
      for (int d = 0; d < head_dim; ++d) v_out[r * vw + h * head_dim + d] = in[h * head_dim + d] * inv;
      s_out[int64_t(r) * heads + h] = den > 0.f ? s_max[int64_t(m_pos[r]) * heads + h] + std::log2(den) : kNegInf;
    }
  }
}

}  // namespace prefixd::worker

namespace prefixd::worker {

#if defined(PREFIXD_HAVE_CUDA)
namespace cuda {
void* CreateStream(bool highest_priority);
void DestroyStream(void* stream) noexcept;
void* CreateEvent();
void DestroyEvent(void* event) noexcept;
void RecordWait(void* event, void* producer, void* waiter);
void RecordEvent(void* event, void* stream);
void StreamWaitEvent(void* waiter, void* event);
void SynchronizeStream(void* stream);
void SynchronizeEvent(void* event);
void* AllocPinned(size_t bytes);
void FreePinned(void* p) noexcept;
}  // namespace cuda
#endif

namespace {
constexpr size_t kEvents = 16;
}  // namespace

StreamSync::StreamSync(kernels::Backend& backend) : cuda_(backend.kind() == kernels::BackendKind::kCuda) {
#if defined(PREFIXD_HAVE_CUDA)
  if (!cuda_) return;
  // Highest priority: when a collective's kernel and compute kernels become ready together (e.g.
  // the state exchange and the decode that overlaps it), the collective's CTAs are dispatched
  // first instead of waiting for SMs the compute grid fills. PREFIXD_COMM_STREAM_PRIORITY=0: normal.
  comm_stream_ = cuda::CreateStream(EnvFlag("PREFIXD_COMM_STREAM_PRIORITY", true));
  try {
    side_stream_ = cuda::CreateStream(false);
    for (size_t i = 0; i < kEvents; ++i) events_.push_back(cuda::CreateEvent());
    for (int i = 0; i < kMarks; ++i) marks_.push_back(cuda::CreateEvent());
    for (void*& e : step_done_) e = cuda::CreateEvent();
  } catch (...) {
    for (void* e : events_) cuda::DestroyEvent(e);
    for (void* e : marks_) cuda::DestroyEvent(e);
    for (void* e : step_done_)
      if (e) cuda::DestroyEvent(e);
    if (side_stream_) cuda::DestroyStream(side_stream_);
    cuda::DestroyStream(comm_stream_);
    throw;
  }
#endif
}

StreamSync::~StreamSync() {
#if defined(PREFIXD_HAVE_CUDA)
  for (void* e : events_) cuda::DestroyEvent(e);
  for (void* e : marks_) cuda::DestroyEvent(e);
  for (void* e : step_done_)
    if (e) cuda::DestroyEvent(e);
  if (side_stream_) cuda::DestroyStream(side_stream_);
  if (comm_stream_) cuda::DestroyStream(comm_stream_);
#endif
}

void StreamSync::Wait(void* waiter, void* producer) {
#if defined(PREFIXD_HAVE_CUDA)
  if (!cuda_ || waiter == producer) return;
  cuda::RecordWait(events_[next_event_], producer, waiter);
  next_event_ = (next_event_ + 1) % events_.size();
#else
  (void)waiter;
  (void)producer;
#endif
}

int StreamSync::Record(void* producer) {
  const int mark = next_mark_;
  next_mark_ = (next_mark_ + 1) % kMarks;
#if defined(PREFIXD_HAVE_CUDA)
  if (cuda_) cuda::RecordEvent(marks_[mark], producer);
#else
  (void)producer;
#endif
  return mark;
}

void StreamSync::WaitFor(void* waiter, int mark) {
#if defined(PREFIXD_HAVE_CUDA)
  if (cuda_) cuda::StreamWaitEvent(waiter, marks_.at(size_t(mark)));
#else
  (void)waiter;
  (void)mark;
#endif
}

void StreamSync::Synchronize() {
#if defined(PREFIXD_HAVE_CUDA)
  if (comm_stream_) cuda::SynchronizeStream(comm_stream_);
  if (side_stream_) cuda::SynchronizeStream(side_stream_);
#endif
}

void StreamSync::EndStepRunAhead(void* stream) {
#if defined(PREFIXD_HAVE_CUDA)
  if (!cuda_) return;
  cuda::RecordEvent(step_done_[step_parity_], stream);
  step_pending_[step_parity_] = true;
  step_parity_ ^= 1;
  if (step_pending_[step_parity_]) cuda::SynchronizeEvent(step_done_[step_parity_]);
  step_pending_[step_parity_] = false;
#else
  (void)stream;
#endif
}

// ---- PinnedStaging ----

PinnedStaging::PinnedStaging(kernels::Backend& backend) : pinned_(backend.kind() == kernels::BackendKind::kCuda) {}

PinnedStaging::~PinnedStaging() {
  for (Slot& s : slots_) Release(&s);
}

void PinnedStaging::Release(Slot* s) noexcept {
#if defined(PREFIXD_HAVE_CUDA)
  if (pinned_ && s->data) cuda::FreePinned(s->data);
#endif
  if (!pinned_) std::free(s->data);
  *s = Slot{};
}

void PinnedStaging::NextStep() {
  slot_ ^= 1;
  slots_[slot_].used = 0;
}

const void* PinnedStaging::Stage(const void* src, size_t bytes) {
  if (bytes == 0) return src;
  Slot& s = slots_[slot_];
  const size_t offset = (s.used + 15) / 16 * 16;
  if (offset + bytes > s.capacity) return nullptr;
  std::memcpy(s.data + offset, src, bytes);
  s.used = offset + bytes;
  return s.data + offset;
}

void PinnedStaging::Grow(size_t bytes) {
  for (Slot& s : slots_) {
    if (s.capacity >= bytes) continue;
    Release(&s);
    const size_t capacity = std::max<size_t>(bytes, 4096) * 2;
#if defined(PREFIXD_HAVE_CUDA)
    if (pinned_) s.data = static_cast<uint8_t*>(cuda::AllocPinned(capacity));
#endif
    if (!pinned_) s.data = static_cast<uint8_t*>(std::malloc(capacity));
    PREFIXD_CHECK_INTERNAL(s.data != nullptr, "PinnedStaging: cannot allocate " << capacity << " bytes");
    s.capacity = capacity;
  }
  slots_[0].used = slots_[1].used = 0;
}

}  // namespace prefixd::worker
