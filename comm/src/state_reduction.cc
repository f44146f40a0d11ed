#include "prefixd/comm/state_reduction.h"

#include "prefixd/common/error.h"

namespace prefixd::comm {

ExchangeBytes PeerMajorBytes(const std::vector<int64_t>& send_items,
                             const std::vector<int64_t>& recv_items, size_t bytes_per_item) {
  PREFIXD_CHECK_ARG(send_items.size() == recv_items.size(),
                    "send and recv counts cover " << send_items.size() << " and " << recv_items.size()
                                                  << " ranks");
  const size_t n = send_items.size();
  ExchangeBytes out;
  out.send_bytes.resize(n);
  out.send_offsets.resize(n);
  out.recv_bytes.resize(n);
  out.recv_offsets.resize(n);
  size_t send_at = 0, recv_at = 0;
  for (size_t j = 0; j < n; ++j) {
    PREFIXD_CHECK_ARG(send_items[j] >= 0 && recv_items[j] >= 0, "negative item count for rank " << j);
    out.send_offsets[j] = send_at;
    out.send_bytes[j] = static_cast<size_t>(send_items[j]) * bytes_per_item;
    send_at += out.send_bytes[j];
    out.recv_offsets[j] = recv_at;
    out.recv_bytes[j] = static_cast<size_t>(recv_items[j]) * bytes_per_item;
    recv_at += out.recv_bytes[j];
  }
  return out;
}

}  // namespace prefixd::comm
