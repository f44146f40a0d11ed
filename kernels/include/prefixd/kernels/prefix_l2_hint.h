// Whether the prefix kernel should stream a plan's prefix K/V with an L2 evict-first hint: a pure
// CPU decision from the plan and the GPU's L2 size, taken once when a backend loads the plan.
//
// Why: K/V is read once per step, so any line it brings into L2 evicts something, and what L2
// holds before an attention step is other work's data, often dirty (the benchmark's 256 MiB write
// flush leaves ~50 MB of dirty lines; a serving loop leaves the previous kernels' outputs). A line
// evicted dirty costs a DRAM write inside the kernel that evicted it. An evict-first stream
// replaces mostly its own lines, so for a step whose reads are a few times L2 most of those
// lines survive it (bench/l2_probe.cu, H200: a 64 MiB read pays 3.2 µs for the dirty lines
// evict-first, 9.5 µs without a hint; 256 MiB pays ~8.4 µs either way).
//
// When it pays (H200, session 19, bench/RESULTS.md): where the prefix kernel is bound by its K/V
// stream (few query rows per KV head: rows ≤ max_rows) and the decode that follows streams at most
// about three times L2: then many of the dirty lines outlive the whole step (−0.5 to −4 µs per
// step at decodes of 2-168 MB, up to 2.7 × L2). A compute-bound prefix kernel absorbs the
// write-back under its arithmetic at no cost, and a hint there moves it into the memory-bound
// decode (+3 to +17 µs at B = 256); a decode of four times L2 or more evicts the dirty lines
// anyway and then pays for those the prefix spared (+1 to +8 µs at 268-537 MB).
#pragma once

#include <cstdint>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

struct PrefixL2HintRule {
  // Query rows per KV head (group requests × g) up to which a prefix group's stream is the bound:
  // one 128-row wgmma tile does 4·rows·D FLOPs per 4·D bytes of K/V, far below the H200's
  // ~180 FLOP/byte ridge.
  int max_rows = 128;
  // The decode's K/V bytes (every decode item's tokens, K and V, 2-byte elements) at most this
  // multiple of L2.
  double max_decode_l2_multiple = 3.0;
};

// True when the plan has prefix items, every group with prefix items has at most rule.max_rows rows
// per KV head, and the decode streams at most rule.max_decode_l2_multiple · l2_bytes. l2_bytes ≤ 0
// (unknown): false.
bool PrefixKvEvictFirst(const CascadePlan& plan, int64_t l2_bytes, const PrefixL2HintRule& rule = {});

}  // namespace prefixd::kernels
