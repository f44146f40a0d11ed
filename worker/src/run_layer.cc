// The per-layer execution of a step (Worker::RunLayer and what it calls): queries made on their
// owners and sent to the shard holders, the cascades, and the reduction of the partial states to
// the owners (all-to-all + n-ary ⊕, or the tree), in the schedules worker.h describes (pipeline
// chunks, head chunks, split own rows, states sent before the own decode). The step's preparation
// (layouts, plans, uploads) is worker.cc's.
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "prefixd/comm/state_reduction.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/worker.h"
#include "prefixd/worker/worker_ops.h"
#include "worker_buffers.h"

namespace prefixd::worker {

using kernels::Backend;

float* Worker::OutV(int layer, const Chunk& ch) {
  const int64_t l = options_.keep_layer_outputs ? layer : 0;
  const int64_t row = int64_t(options_.num_qo_heads) * options_.pool.head_dim;
  return out_v_.get<float>() + (l * int64_t(owned_output_ids_.size()) + ch.own_offset) * row;
}

float* Worker::OutS(int layer, const Chunk& ch) {
  const int64_t l = options_.keep_layer_outputs ? layer : 0;
  return out_s_.get<float>() + (l * int64_t(owned_output_ids_.size()) + ch.own_offset) * options_.num_qo_heads;
}

void Worker::RunLayer(int layer) {
  if (chunks_[0].active && chunks_[0].head_chunks > 1) {
    RunLayerHeadChunks(chunks_[0], layer);
    return;
  }
  const kernels::KvPoolShape& pool = options_.pool;
  const int hq = options_.num_qo_heads;
  const int row_words = hq * pool.head_dim * kernels::DTypeBytes(pool.dtype) / 4;
  void* comm_stream = sync_->comm_stream();

  const size_t q_row_bytes = size_t(row_words) * 4;
  // The step's K/V append (pending before the first layer) on the side stream of the own rows'
  // decode, its only reader (WorkerOptions::append_on_decode_stream); else on the compute stream.
  void* side = sync_->side_stream();
  const bool append_on_side = append_pending_ && options_.append_on_decode_stream && options_.decode_on_side_stream &&
                              side != nullptr && chunks_.size() == 1 && chunks_[0].active &&
                              chunks_[0].head_chunks == 1 && SendsBeforeDecode(chunks_[0]);
  // The query exchange has nothing to overlap with when there is one chunk and no split: then it
  // runs on the compute stream (WorkerOptions::queries_on_compute_stream).
  const bool q_on_compute = options_.queries_on_compute_stream && chunks_.size() == 1 && !chunks_[0].is_split &&
                            (!append_pending_ || append_on_side);

  // 1. Every chunk's queries (made on their owners), and the rows other holders need: packed
  //    for sending, or made in place in the local-row buffer (Chunk::queries_in_place).
  for (Chunk& ch : chunks_) {
    if (!ch.active) continue;
    const StepLayout& L = ch.layout;
    Buffers& B = *ch.buf;
    kernels::SyntheticQueries q;
    q.hashes = B.own_hash;
    q.positions = B.own_pos;
    q.n = L.num_own();
    q.num_heads = hq;
    q.head_dim = pool.head_dim;
    q.dtype = pool.dtype;
    q.layer = layer;
    q.q = ch.queries_in_place ? B.q_local.get<uint8_t>() + L.q_own_local_row0 * q_row_bytes : B.q_own.get();
    kernels::FillSyntheticQueries(*ch.backend, q);
    if (L.needs_query_exchange && !ch.queries_in_place)
      GatherRows(*ch.backend, B.q_send.get(), B.q_own.get(), nullptr, B.q_pack, int(L.q_pack.size()), row_words, 0);
  }
  // The append on the side stream, enqueued before the query exchange so that it runs beside it
  // (it waits for the upload of its tokens, on the compute stream).
  if (append_on_side) {
    sync_->Wait(side, chunks_[0].backend->stream());
    kernels::FillSyntheticKv(*chunks_[0].backend, kv_, append_tokens_, side);
    append_pending_ = false;
    ++appends_on_decode_stream_;
  }
  // 2. All chunks' queries go out first, so that later chunks' queries travel while earlier
  //    chunks compute.
  for (Chunk& ch : chunks_) {
    if (!ch.active || !ch.layout.needs_query_exchange) continue;
    Buffers& B = *ch.buf;
    void* q_stream = q_on_compute ? ch.backend->stream() : comm_stream;
    sync_->Wait(q_stream, ch.backend->stream());
    const void* send = ch.queries_in_place ? B.q_local.get() : B.q_send.get();
    void* recv = ch.queries_in_place ? B.q_local.get() : B.q_recv.get();
    if (options_.null_collectives) continue;
    // Every rank takes the same branch: StepLayout::q_all_gather is global, and queries_in_place
    // depends only on it, the option and the chunking, which all ranks share.
    if (ch.queries_in_place && ch.layout.q_all_gather && options_.queries_all_gather) {
      const size_t block = size_t(ch.layout.num_own()) * q_row_bytes;
      comm_->AllGather(B.q_local.get<uint8_t>() + size_t(ch.layout.q_own_local_row0) * q_row_bytes, recv, block,
                       q_stream);
      ++layers_queries_all_gathered_;
    } else {
      comm_->AllToAllV(send, B.q_bytes.send_bytes, B.q_bytes.send_offsets, recv, B.q_bytes.recv_bytes,
                       B.q_bytes.recv_offsets, q_stream);
    }
  }
  // The step's K/V append (Decode), while the queries travel; the suffix decode below reads it.
  if (append_pending_) {
    kernels::FillSyntheticKv(*chunks_[0].backend, kv_, append_tokens_);
    append_pending_ = false;
  }
  MarkPhase(&profile_.queries_ms);
  // 3. Per chunk: partial states, then their reduction to the owners on the comm stream while
  //    the next chunk computes.
  for (Chunk& ch : chunks_) {
    if (!ch.active) continue;
    if (ch.is_split) {
      RunSplitCascades(ch, layer);
      continue;
    }
    const StepLayout& L = ch.layout;
    Buffers& B = *ch.buf;
    Backend& be = *ch.backend;
    if (L.needs_query_exchange && !q_on_compute) sync_->Wait(be.stream(), comm_stream);
    if (!L.own_is_local && !ch.queries_in_place)
      GatherRows(be, B.q_local.get(), B.q_recv.get(), B.q_own.get(), B.q_unpack, L.num_local(), row_words, 0);
    // Without any state exchange every local row is owned: the cascade writes the outputs.
    const bool direct = !L.needs_state_exchange;
    PREFIXD_CHECK_INTERNAL(!direct || L.own_is_local, "chunk without state exchange has rows it does not own");
    kernels::CascadeArgs args;
    args.kv = kv_;
    args.layer = layer;
    args.q = L.own_is_local && !ch.queries_in_place ? B.q_own.get() : B.q_local.get();
    args.sm_scale = options_.sm_scale;
    args.v_out = direct ? OutV(layer, ch) : B.v_loc.get<float>();
    args.s_out = direct ? OutS(layer, ch) : B.s_loc.get<float>();
    const bool send_first = SendsBeforeDecode(ch);
    // The side-stream decode beside the prefix kernel (WorkerOptions::decode_beside_prefix), or
    // waiting for the prefix kernel only (decode_behind_prefix).
    const bool decode_beside_prefix = send_first && options_.decode_beside_prefix && options_.decode_on_side_stream &&
                                      side != nullptr && !ch.plan.DecodeReadsPrefixStates();
    const bool decode_behind_prefix =
        send_first && !decode_beside_prefix && options_.decode_behind_prefix && options_.decode_on_side_stream;
    int decode_mark = -1;
    if (L.num_local() > 0) {
      if (send_first) {
        // The rows that travel are the merge part's (they have no suffix here): it packs them
        // into the send buffer itself (WorkerOptions::merge_into_send_buffer).
        if (options_.merge_into_send_buffer) {
          args.merge_packed_row = B.st_send_row;
          args.merge_packed_out = B.st_send.get<float>();
        }
        // The merge of the rows without decode items (those that travel, and own rows without a
        // suffix here) now; the own rows with decode items are merged behind their decode.
        if (decode_behind_prefix) {
          be.RunCascadeParts(args, kernels::Backend::kPrefixPart);
          decode_mark = sync_->Record(be.stream());
          be.RunCascadeParts(args, kernels::Backend::kMergeNoDecodePart);
          ++layers_decode_behind_prefix_;
        } else if (decode_beside_prefix) {
          // The side stream joins here, before the prefix launch: the decode waits for the
          // queries and the K/V append, not for the prefix kernel, and is launched after it so
          // that the prefix grid takes its SMs first.
          // The merge of the own rows reads their prefix states too: it follows the prefix part
          // (decode_mark, ReduceAllToAll), not just the decode.
          sync_->Wait(side, be.stream());
          be.RunCascadeParts(args, kernels::Backend::kPrefixPart | kernels::Backend::kMergeNoDecodePart);
          decode_mark = sync_->Record(be.stream());
          kernels::CascadeArgs decode = args;
          decode.stream = side;
          decode.decode_free_sms = options_.decode_free_sms;
          be.RunCascadeParts(decode, kernels::Backend::kDecodePart);
          ++layers_decode_beside_prefix_;
        } else {
          be.RunCascadeParts(args, kernels::Backend::kPrefixPart | kernels::Backend::kMergeNoDecodePart);
        }
        ++layers_sent_before_decode_;
      } else {
        be.RunCascade(args);
      }
    }
    MarkPhase(&profile_.attention_ms);
    if (direct) continue;
    if (options_.reduction == StateReduction::kAllToAll)
      ReduceAllToAll(ch, layer, send_first ? &args : nullptr, decode_mark, decode_beside_prefix);
    else ReduceTree(ch, layer);
    MarkPhase(&profile_.reduce_ms);
  }
}

bool Worker::SendsBeforeDecode(const Chunk& ch) const {
  // send_before_decode (worker.h): the states that travel are final after prefix + merge.
  const StepLayout& L = ch.layout;
  return options_.send_before_decode && !ch.is_split && L.needs_state_exchange &&
         options_.reduction == StateReduction::kAllToAll && L.num_local() > 0 && !ch.plan.decode_items.empty() &&
         !ch.send_needs_decode;
}

void Worker::RunLayerHeadChunks(Chunk& ch, int layer) {
  const kernels::KvPoolShape& pool = options_.pool;
  const StepLayout& L = ch.layout;
  Buffers& B = *ch.buf;
  Backend& be = *ch.backend;
  void* compute = be.stream();
  void* comm_stream = sync_->comm_stream();
  const int n = ch.head_chunks, hq = options_.num_qo_heads, d = pool.head_dim;
  const int hq_c = hq / n, kv_c = pool.num_kv_heads / n, b_loc = L.num_local(), b_own = L.num_own();
  const int64_t q_row_c = int64_t(hq_c) * d * kernels::DTypeBytes(pool.dtype);  // bytes
  const int row_words_c = int(q_row_c / 4);
  const int64_t v_row_c = int64_t(hq_c) * d, st_row_c = int64_t(hq_c) * (d + 1);  // floats
  const int64_t q_send = std::accumulate(L.q_send_count.begin(), L.q_send_count.end(), int64_t(0)), q_recv = std::accumulate(L.q_recv_count.begin(), L.q_recv_count.end(), int64_t(0));
  const int64_t st_send = std::accumulate(L.st_send_count.begin(), L.st_send_count.end(), int64_t(0)), st_recv = std::accumulate(L.st_recv_count.begin(), L.st_recv_count.end(), int64_t(0));
  const bool direct = !L.needs_state_exchange;
  PREFIXD_CHECK_INTERNAL(!direct || L.own_is_local, "chunk without state exchange has rows it does not own");
  auto* q_send_base = B.q_send.get<uint8_t>();
  auto* q_recv_base = B.q_recv.get<uint8_t>();
  auto* q_local_base = B.q_local.get<uint8_t>();

  // 1. Own queries, every head; then every chunk's send rows at once (chunk-major) and, on the
  //    comm stream, chunk after chunk, the query exchanges (each marked, so that chunk c's
  //    cascade waits for its own queries only).
  kernels::SyntheticQueries q;
  q.hashes = B.own_hash;
  q.positions = B.own_pos;
  q.n = b_own;
  q.num_heads = hq;
  q.head_dim = d;
  q.dtype = pool.dtype;
  q.layer = layer;
  q.q = B.q_own.get();
  kernels::FillSyntheticQueries(be, q);
  std::vector<int> q_mark(n, -1), st_mark(n, -1);
  if (L.needs_query_exchange) {
    GatherRows(be, q_send_base, B.q_own.get(), nullptr, B.hc_q_pack, int(n * q_send), row_words_c, 0);
    sync_->Wait(comm_stream, compute);
    for (int c = 0; c < n; ++c) {
      if (!options_.null_collectives)
        comm_->AllToAllV(q_send_base + c * q_send * q_row_c, B.hc_q_bytes.send_bytes, B.hc_q_bytes.send_offsets,
                         q_recv_base + c * q_recv * q_row_c, B.hc_q_bytes.recv_bytes, B.hc_q_bytes.recv_offsets,
                         comm_stream);
      q_mark[c] = sync_->Record(comm_stream);
    }
  }
  MarkPhase(&profile_.queries_ms);

  // Chunk c's merge: its own rows' local states ⊕ what arrived, into the chunk-major outputs.
  auto merge = [&](int c) {
    sync_->WaitFor(compute, st_mark[c]);
    if (b_own == 0) return;
    const float* recv = B.st_recv.get<float>() + c * st_recv * st_row_c;
    const float* v_loc = B.v_loc.get<float>() + int64_t(c) * b_loc * v_row_c;
    const float* s_loc = B.s_loc.get<float>() + int64_t(c) * b_loc * hq_c;
    float* v_out = B.v_hc.get<float>() + int64_t(c) * b_own * v_row_c;
    float* s_out = B.s_hc.get<float>() + int64_t(c) * b_own * hq_c;
    if (L.merge_n == 1) {
      UnpackStates(be, recv, v_loc, s_loc, B.merge_src, 1, b_own, hq_c, d, v_out, s_out);
      return;
    }
    MergeExchangedStates(be, recv, v_loc, s_loc, B.merge_src, L.merge_n, b_own, hq_c, d, v_out, s_out);
  };

  // 2. Per chunk: its queries, its cascade over its KV heads, its states out; the previous
  //    chunk's merge once this chunk's cascade is enqueued.
  for (int c = 0; c < n; ++c) {
    if (q_mark[c] >= 0) sync_->WaitFor(compute, q_mark[c]);
    void* q_c = q_local_base + int64_t(c) * b_loc * q_row_c;
    GatherRows(be, q_c, q_recv_base + c * q_recv * q_row_c, B.q_own.get(), B.hc_q_unpack + int64_t(c) * b_loc, b_loc,
               row_words_c, 0);
    float* v_c = direct ? B.v_hc.get<float>() + int64_t(c) * b_own * v_row_c
                        : B.v_loc.get<float>() + int64_t(c) * b_loc * v_row_c;
    float* s_c = direct ? B.s_hc.get<float>() + int64_t(c) * b_own * hq_c
                        : B.s_loc.get<float>() + int64_t(c) * b_loc * hq_c;
    if (b_loc > 0) {
      kernels::CascadeArgs args;
      args.kv = kv_;
      args.layer = layer;
      args.q = q_c;
      args.sm_scale = options_.sm_scale;
      args.v_out = v_c;
      args.s_out = s_c;
      args.kv_head_offset = c * kv_c;
      args.kv_head_count = kv_c;
      be.RunCascade(args);
    }
    MarkPhase(&profile_.attention_ms);
    if (direct) continue;
    float* st_c = B.st_send.get<float>() + c * st_send * st_row_c;
    PackStates(be, v_c, s_c, B.st_pack, int(L.st_pack.size()), hq_c, d, st_c);
    sync_->Wait(comm_stream, compute);
    if (!options_.null_collectives)
      comm_->AllToAllV(st_c, B.hc_st_bytes.send_bytes, B.hc_st_bytes.send_offsets,
                       B.st_recv.get<float>() + c * st_recv * st_row_c, B.hc_st_bytes.recv_bytes,
                       B.hc_st_bytes.recv_offsets, comm_stream);
    st_mark[c] = sync_->Record(comm_stream);
    if (c > 0) merge(c - 1);
    MarkPhase(&profile_.reduce_ms);
  }
  if (!direct) merge(n - 1);
  // 3. Chunk-major merged states → the [B_own][H_qo][D] outputs. (The comm stream's last work,
  //    chunk N−1's state exchange, is behind every other exchange of this layer, and the compute
  //    stream has waited for it: nothing the next layer overwrites is still being read or sent.)
  if (b_own > 0) {
    GatherRows(be, OutV(layer, ch), B.v_hc.get(), nullptr, B.hc_out, b_own * n, int(v_row_c), 0);
    GatherRows(be, OutS(layer, ch), B.s_hc.get(), nullptr, B.hc_out, b_own * n, hq_c, 0);
  }
  MarkPhase(&profile_.reduce_ms);
}

void Worker::RunSplitCascades(Chunk& ch, int layer) {
  const StepLayout& L = ch.layout;
  Buffers& B = *ch.buf;
  Backend& be = *ch.backend;
  Backend& sp = *ch.split;
  const int hq = options_.num_qo_heads;
  const int row_words = hq * options_.pool.head_dim * kernels::DTypeBytes(options_.pool.dtype) / 4;
  void* comm_stream = sync_->comm_stream();
  kernels::CascadeArgs args;
  args.kv = kv_;
  args.layer = layer;
  args.sm_scale = options_.sm_scale;
  // O: the own rows (own queries, made on the chunk's stream), on the split stream, off the
  // critical path: it overlaps the query exchange, X and the state exchange.
  sync_->Wait(sp.stream(), be.stream());
  args.q = B.q_own.get();
  args.v_out = B.v_own->get<float>();
  args.s_out = B.s_own->get<float>();
  sp.RunCascade(args);
  // X: the rows owned elsewhere, once their queries have arrived.
  sync_->Wait(be.stream(), comm_stream);
  if (!ch.x_queries_as_received)
    GatherRows(be, B.q_x.get(), B.q_recv.get(), B.q_own.get(), B.x_unpack, ch.num_x, row_words, 0);
  args.q = ch.x_queries_as_received ? B.q_recv.get() : B.q_x.get();
  args.v_out = B.v_x.get<float>();
  args.s_out = B.s_x.get<float>();
  be.RunCascade(args);
  MarkPhase(&profile_.attention_ms);
  if (options_.reduction == StateReduction::kAllToAll) {
    ReduceAllToAll(ch, layer, B.v_x.get<float>(), B.s_x.get<float>(), B.x_pack, B.v_own->get<float>(),
                   B.s_own->get<float>(), B.o_merge_src, sp.stream());
  } else {
    // Tree: every local row's state in local-row order, then the usual reduction.
    sync_->Wait(be.stream(), sp.stream());
    GatherRows(be, B.v_loc.get(), B.v_x.get(), B.v_own->get(), B.loc_from_split, L.num_local(),
               hq * options_.pool.head_dim, 0);
    GatherRows(be, B.s_loc.get(), B.s_x.get(), B.s_own->get(), B.loc_from_split, L.num_local(), hq, 0);
    ReduceTree(ch, layer);
  }
  MarkPhase(&profile_.reduce_ms);
}

void Worker::ReduceAllToAll(Chunk& ch, int layer, const kernels::CascadeArgs* decode_after_send, int decode_mark,
                            bool decode_enqueued) {
  Buffers& B = *ch.buf;
  const bool packed = decode_after_send != nullptr && decode_after_send->merge_packed_row != nullptr;
  ReduceAllToAll(ch, layer, B.v_loc.get<float>(), B.s_loc.get<float>(), packed ? nullptr : B.st_pack,
                 B.v_loc.get<float>(), B.s_loc.get<float>(), B.merge_src, nullptr, decode_after_send, decode_mark,
                 decode_enqueued);
}

void Worker::ReduceAllToAll(Chunk& ch, int layer, const float* v_send, const float* s_send, const int32_t* pack,
                            const float* v_local, const float* s_local, const int32_t* merge_src, void* local_stream,
                            const kernels::CascadeArgs* decode_after_send, int decode_mark, bool decode_enqueued) {
  const StepLayout& L = ch.layout;
  Buffers& B = *ch.buf;
  Backend& be = *ch.backend;
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim, b_own = L.num_own();
  void* comm_stream = sync_->comm_stream();
  if (pack != nullptr) PackStates(be, v_send, s_send, pack, int(L.st_pack.size()), hq, d, B.st_send.get<float>());
  // The own rows' suffix decode (it finishes them into the local states) runs while the states
  // travel: on the side stream, with the exchange on the compute stream right behind what it
  // sends (WorkerOptions::decode_on_side_stream), or else on the compute stream, the exchange on
  // the comm stream.
  void* side = decode_after_send != nullptr && options_.decode_on_side_stream ? sync_->side_stream() : nullptr;
  void* exchange_stream = side != nullptr ? be.stream() : comm_stream;
  if (side != nullptr && !decode_enqueued) {  // the decode reads the prefix states
    if (decode_mark >= 0) sync_->WaitFor(side, decode_mark);
    else sync_->Wait(side, be.stream());
  }
  sync_->Wait(exchange_stream, be.stream());
  if (!options_.null_collectives)
    comm_->AllToAllV(B.st_send.get(), B.st_bytes.send_bytes, B.st_bytes.send_offsets, B.st_recv.get(),
                     B.st_bytes.recv_bytes, B.st_bytes.recv_offsets, exchange_stream);
  if (decode_after_send != nullptr) {
    kernels::CascadeArgs decode = *decode_after_send;
    decode.stream = side;
    if (side != nullptr) decode.decode_free_sms = options_.decode_free_sms;
    if (!decode_enqueued) {
      be.RunCascadeParts(decode, kernels::Backend::kDecodePart | kernels::Backend::kMergeAfterDecodePart);
    } else {
      // The decode ran beside the prefix kernel on the side stream; the own rows' merge also
      // reads their prefix states, so it waits for the prefix part as well.
      PREFIXD_CHECK_INTERNAL(side != nullptr && decode_mark >= 0, "decode beside the prefix without its side stream");
      sync_->WaitFor(side, decode_mark);
      be.RunCascadeParts(decode, kernels::Backend::kMergeAfterDecodePart);
    }
  }
  sync_->Wait(be.stream(), side != nullptr ? side : comm_stream);
  // The local states may come from another stream (split: O); the merge waits for them, which
  // also keeps the next layer's queries from overwriting what that stream still reads.
  if (local_stream != nullptr) sync_->Wait(be.stream(), local_stream);
  if (b_own == 0) return;
  float* v_out = OutV(layer, ch);
  float* s_out = OutS(layer, ch);
  if (L.merge_n == 1) {  // nothing arrives for any own row: just its local row
    UnpackStates(be, B.st_recv.get<float>(), v_local, s_local, merge_src, 1, b_own, hq, d, v_out, s_out);
    return;
  }
  MergeExchangedStates(be, B.st_recv.get<float>(), v_local, s_local, merge_src, L.merge_n, b_own, hq, d, v_out, s_out);
}

void Worker::ReduceTree(Chunk& ch, int layer) {
  const StepLayout& L = ch.layout;
  Buffers& B = *ch.buf;
  Backend& be = *ch.backend;
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim;
  void* comm_stream = sync_->comm_stream();
  const int64_t st_row_floats = int64_t(hq) * (d + 1);
  const uint32_t neg_inf = kernels::FloatBits(-std::numeric_limits<float>::infinity());
  GatherRows(be, B.s_max.get(), nullptr, B.s_loc.get(), B.tree_max_src, L.num_decode(), hq, neg_inf);
  sync_->Wait(comm_stream, be.stream());
  if (!options_.null_collectives)
    comm_->AllReduceMax(B.s_max.get<float>(), size_t(L.num_decode()) * hq, comm_stream);
  sync_->Wait(be.stream(), comm_stream);
  const size_t slab_floats = size_t(num_ranks()) * L.max_own * st_row_floats;
  be.Fill(B.slab.get(), 0, slab_floats * 4);
  TreeScaleStates(be, B.v_loc.get<float>(), B.s_loc.get<float>(), B.s_max.get<float>(), B.tree_local_pos, B.tree_dst,
                  L.num_local(), hq, d, B.slab.get<float>());
  sync_->Wait(comm_stream, be.stream());
  if (!options_.null_collectives)
    comm_->ReduceScatterSum(B.slab.get<float>(), B.slab_recv.get<float>(), size_t(L.max_own) * st_row_floats,
                            comm_stream);
  sync_->Wait(be.stream(), comm_stream);
  TreeFinishStates(be, B.slab_recv.get<float>(), B.s_max.get<float>(), B.tree_own_pos, L.num_own(), hq, d,
                   OutV(layer, ch), OutS(layer, ch));
}

}  // namespace prefixd::worker
