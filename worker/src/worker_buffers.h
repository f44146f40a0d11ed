// Worker::Buffers, internal to worker/src: everything one chunk of a step needs in its backend's
// memory, reserved before the first layer. worker.cc sizes and fills them (PrepareChunk);
// run_layer.cc runs the layers with them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "prefixd/comm/state_reduction.h"
#include "prefixd/worker/backend_buffer.h"
#include "prefixd/worker/worker.h"

namespace prefixd::worker {

struct Worker::Buffers {
  // c: the data Comm. The buffers that all-to-alls send from or receive into are its exchange
  // buffers (BackendBuffer: from Comm::AllocRegistered where the Comm offers it).
  Buffers(kernels::Backend* b, comm::Comm* c)
      : upload(b), q_own(b), q_send(b, c), q_recv(b, c), q_local(b, c), v_loc(b), s_loc(b), st_send(b, c),
        st_recv(b, c), s_max(b), slab(b), slab_recv(b), q_x(b), v_x(b), s_x(b), v_hc(b), s_hc(b) {}
  BackendBuffer upload;                   // per-step host arrays, one copy (layout below)
  std::vector<uint8_t> upload_host;       // their host copy (staged for the copy: UploadAsync)
  BackendBuffer q_own, q_send, q_recv;
  BackendBuffer q_local;                  // also sent from and received into (StepLayout::q_direct)
  BackendBuffer v_loc, s_loc;             // this rank's partial states, [B_loc][H][D] / [B_loc][H]
  BackendBuffer st_send, st_recv;         // packed state rows
  BackendBuffer s_max, slab, slab_recv;   // tree reduction
  BackendBuffer q_x, v_x, s_x;            // split: X's queries and states [num_x]
  BackendBuffer v_hc, s_hc;               // head chunks: merged states, [N][B_own][H_qo/N][D] / [..][H_qo/N]
  // split: O's states [B_own], in the split backend's memory (same device).
  std::unique_ptr<BackendBuffer> v_own, s_own;

  // Pointers into `upload` for the current step.
  const uint64_t* own_hash = nullptr;     // [B_own]: sequence hash of the token decoded
  const int64_t* own_pos = nullptr;       // [B_own]: its position
  const int32_t* q_pack = nullptr;
  const int32_t* q_unpack = nullptr;
  const int32_t* st_pack = nullptr;
  // [B_loc]: the send row of each local row (st_pack inverted), −1 for rows not sent: where the
  // merge part writes the packed states itself (WorkerOptions::merge_into_send_buffer).
  const int32_t* st_send_row = nullptr;
  const int32_t* merge_src = nullptr;
  const int32_t* tree_max_src = nullptr;
  const int32_t* tree_local_pos = nullptr;
  const int32_t* tree_dst = nullptr;
  const int32_t* tree_own_pos = nullptr;
  const int32_t* x_unpack = nullptr;      // split: [num_x] recv row of X's row's query
  const int32_t* x_pack = nullptr;        // split: [Σ send] X row of each send row
  const int32_t* o_merge_src = nullptr;   // split: merge_src with local rows as own (O) rows
  const int32_t* loc_from_split = nullptr;  // split: [B_loc] X row, or −2 − O row (tree rebuild)
  // Head chunks (N): rows of H_qo/N heads; own query sub-row (own row · N + c).
  const int32_t* hc_q_pack = nullptr;     // [N][Σ send]: own sub-row of each chunk-major send row
  const int32_t* hc_q_unpack = nullptr;   // [N][B_loc]: chunk c's recv row, or −2 − own sub-row
  const int32_t* hc_out = nullptr;        // [B_own · N]: chunk-major merged row of each output sub-row

  // Per-peer byte counts and offsets of this step's exchanges.
  comm::ExchangeBytes q_bytes, st_bytes;
  comm::ExchangeBytes hc_q_bytes, hc_st_bytes;  // head chunks: one chunk's exchange

  int64_t bytes() const {
    const BackendBuffer* all[] = {&upload, &q_own, &q_send, &q_recv, &q_local, &v_loc, &s_loc, &st_send, &st_recv,
                                  &s_max, &slab, &slab_recv, &q_x, &v_x, &s_x, &v_hc, &s_hc};
    int64_t n = 0;
    for (const BackendBuffer* b : all) n += int64_t(b->bytes());
    if (v_own) n += int64_t(v_own->bytes() + s_own->bytes());
    return n;
  }
};

}  // namespace prefixd::worker
