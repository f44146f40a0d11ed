// Byte layout of the per-peer exchanges of one decode step (queries to the prefix holders, partial
// states back to the owners): AllToAllV arguments for peer-major contiguous buffers. Which rows go
// where, and the two exact state reductions built on them (all-to-all gather to the owner, and the
// tree reduction), are described once, in worker/include/prefixd/worker/step_layout.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prefixd::comm {

// AllToAllV arguments for peer-major contiguous buffers: the rows for (or from) rank j follow
// those of rank j−1, with no gaps.
struct ExchangeBytes {
  std::vector<size_t> send_bytes, send_offsets, recv_bytes, recv_offsets;
};
ExchangeBytes PeerMajorBytes(const std::vector<int64_t>& send_items,
                             const std::vector<int64_t>& recv_items, size_t bytes_per_item);

}  // namespace prefixd::comm
