// Whether a plan's prefix items let the persistent sm_90a prefix grid run as CTA pairs (clusters of
// two that multicast each K/V tile into both CTAs' rings): a pure CPU check, taken once when a
// backend loads the plan.
//
// Why pairs: where a KV head has several row tiles (32/32 B256: 2; 32/8 B256: 8), each tile's K/V
// is read once per row tile, i.e. the compute-bound prefix kernel pulls ~4.5 TB/s from L2
// (bench/RESULTS.md, session 50) for bytes it needs from DRAM once. A pair in which each CTA loads
// half of a tile and multicasts it halves that traffic and the TMA issues per CTA.
//
// Why a check: the two CTAs of a pair share every ring stage, so they must walk exactly the same
// K/V tiles in the same order: CTA 2j and CTA 2j + 1 must run equally many items, item by item of
// the same group, KV head and token range, and with as many row tiles each (the kernel walks an
// item's tokens once per row tile). The items a CTA runs follow the kernel's rule
// (prefix_attention_sm90a.cuh: FirstItemOfCta / NextItemOfCta): item c first, then the plan's
// cta_next chain where the grid is the plan's balanced one, else round-robin (c + k · grid).
#pragma once

#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// True when `grid` is even and ≥ 2 and every pair of CTAs (2j, 2j + 1) of that grid walks the same
// K/V tiles in the same order (above), with items of up to tile_rows rows per row tile;
// balanced_ctas is the plan's CascadePlan::prefix_balanced_ctas. False for an empty item list, a
// tile_rows < 1 or a chain that leaves the item list or loops.
bool PrefixCtaPairsShareKv(const std::vector<PrefixWorkItem>& items, int grid, int balanced_ctas, int tile_rows);

}  // namespace prefixd::kernels
