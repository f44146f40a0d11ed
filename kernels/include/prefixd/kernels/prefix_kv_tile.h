// Tokens per K/V tile of the sm_90a prefix kernel for a plan: a pure CPU decision, taken once when
// a backend loads the plan (like PrefixKvEvictFirst, prefix_l2_hint.h).
//
// Why a choice: a longer tile spreads each tile's fixed turn (barrier waits, the max and O's
// rescale, descriptors) over more tokens, but an item shorter than a tile still pays a whole one,
// and an item's last tile is mostly masked when the tile does not divide it.
//   head_dim 64: the default is 192 tokens (prefix parts 6-9% faster on long prefixes than 128,
//     H200, bench/RESULTS.md session 43), but the cascades at P = 128 and 256 were 1-1.5 µs slower
//     than with 128-token tiles, which put 32/8 B256 P128 S32 6.1% behind plain decode (session 43,
//     run 9): 128 for plans of short items.
//   head_dim 128: the default is 128 tokens; 160 (the longest without new register spills in the
//     overlapped schedule) takes the B256 P32768 prefix parts 1.8-2.4% lower, but items of 1024
//     tokens 3% higher (seven 160-token tiles against eight of 128), and the narrow CTA (items of
//     at most 64 rows) 0.5-2.5% higher on items of 2048 and 8192 tokens (session 58, run 1): 160
//     for plans of long items in wide CTAs only. In the concurrent mode (the decode on k SMs
//     beside the prefix) it took 32/8 B256 P32768 S256's step 4.0 µs lower (items of ~10900
//     tokens) but P8192's 1.5 µs higher (items of 4096; its prefix alone 0.4 µs lower). Since the
//     speculative softmax (session 85) shortened each tile's turn, the longer tile also lost on
//     items of 4096 tokens one after the other: prefix parts 2.7-4.0% slower than with 128-token
//     tiles (32/32 B256 P8192 69.1-69.4 against 66.5-66.7 µs, 32/8 B64 P32768 68.4-68.6 against
//     66.6-66.7; s84's exact softmax even there), still 1.2% faster on items of 16384 (32/32 B256
//     P32768 217.7-218.2 against 220.3-221.1), H100, bench/RESULTS.md session 88, run 4. So in
//     every mode only where the items average at least kLongTileItemTokens: the steps whose tile
//     changed 1.0-3.4 µs faster (13 of 36 fp16 shapes B64-256 P8192-32768, 4 of 12 bf16), none
//     slower beyond ±0.7 µs (run 5, an A/B of the two rules in one call).
// So the plan's items decide between the head_dim's two tiles: the one that costs less over them,
// counting each tile as its tokens plus the fixed turn (PrefixKvTileTurnTokens).
#pragma once

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// The kernel's tile where nothing else is known: 64 tokens at head_dim 256 (FlashAttention-3's; the
// ring and S registers of a larger one do not fit beside O's 128), 128 at 128, and 192 at 64, where
// O holds only 32 registers (224 spills and 256 serialises the wgmmas, bench/NOTES-prefix.md,
// session 43).
constexpr int DefaultPrefixKvTileTokens(int head_dim) { return head_dim == 256 ? 64 : head_dim == 64 ? 192 : 128; }

// The kernel's other tile at a head_dim, 0 where it has one only (256).
constexpr int AlternatePrefixKvTileTokens(int head_dim) { return head_dim == 64 ? 128 : head_dim == 128 ? 160 : 0; }

// The per-tile turn in tokens of tile work, fitted to the long-prefix gains of the longer tile:
// (L/192)(192 + t) / ((L/128)(128 + t)) = 0.92 at head_dim 64 gives t = 40 (session 43); at 128 the
// 2.0-2.4% of 128 items of 16384 tokens (103 tiles of 160 against 128 of 128) give t = 20-22
// (session 58): the same time per turn, at twice the time per token.
constexpr int PrefixKvTileTurnTokens(int head_dim) { return head_dim == 64 ? 40 : 20; }

// The threshold for the longer head_dim-128 tile: mean tokens per prefix item (wide CTAs).
inline constexpr int kLongTileItemTokens = 8192;

// Rows above which a prefix item takes the wide CTA (two consumer warpgroups of 64 rows); plans
// whose items all have at most this many run the narrow CTA (sm90a::UsesNarrowCta).
inline constexpr int kPrefixNarrowItemRows = 64;

// Σ over the plan's prefix items of ⌈tokens / tile⌉ · (tile + PrefixKvTileTurnTokens(head_dim)):
// the model ChoosePrefixKvTileTokens compares.
double PrefixKvTileCost(const CascadePlan& plan, int tile_tokens);

// The head_dim's alternate tile where PrefixKvTileCost is lower with it than with the default
// (ties: the default), else the default; at head_dim 128 the default for narrow-CTA plans and for
// plans of shorter items (above); at 256 always the default (its one tile).
int ChoosePrefixKvTileTokens(const CascadePlan& plan);

}  // namespace prefixd::kernels
