// Tokens per K/V tile of the sm_90a prefix kernel for a plan: a pure CPU decision, taken once when
// a backend loads the plan (like PrefixKvEvictFirst, prefix_l2_hint.h).
//
// Why a choice: at head_dim 64 the kernel's default tile is 192 tokens (a third fewer per-tile turns
// than 128: prefix parts 6-9% faster on long prefixes, H200, bench/RESULTS.md session 43). But an
// item shorter than a tile still pays a whole one: a 128-token item in a 192-token tile computes a
// third more and zeroes the V rows before its run, and a 256-token item takes two 192-token tiles
// where two 128-token ones do less. Measured there (session 43, run 9): the cascades at P = 128 and
// 256 1-1.5 µs slower than with 128-token tiles, which put 32/8 B256 P128 S32 6.1% behind plain
// decode. So at head_dim 64 the plan's items decide: the tile that costs less over them, counting
// each tile as its tokens plus a fixed turn (kPrefixKvTileTurnTokens).
#pragma once

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// The kernel's tile where nothing else is known: 64 tokens at head_dim 256 (FlashAttention-3's; the
// ring and S registers of a larger one do not fit beside O's 128), 128 at 128, and 192 at 64, where
// O holds only 32 registers (224 spills and 256 serialises the wgmmas, bench/NOTES-prefix.md,
// session 43).
constexpr int DefaultPrefixKvTileTokens(int head_dim) { return head_dim == 256 ? 64 : head_dim == 64 ? 192 : 128; }

// The per-tile turn (barrier waits, the max and O's rescale, descriptors) in tokens of tile work:
// 40 fits the long-prefix gain, (L/192)(192 + t) / ((L/128)(128 + t)) = 0.92 (session 43).
inline constexpr int kPrefixKvTileTurnTokens = 40;

// Σ over the plan's prefix items of ⌈tokens / tile⌉ · (tile + kPrefixKvTileTurnTokens): the model
// ChoosePrefixKvTileTokens compares.
double PrefixKvTileCost(const CascadePlan& plan, int tile_tokens);

// At head_dim 64: 128 where PrefixKvTileCost is lower with it than with 192 (ties: 192), else 192;
// at other head_dims the default (their kernels are compiled for that one tile).
int ChoosePrefixKvTileTokens(const CascadePlan& plan);

}  // namespace prefixd::kernels
