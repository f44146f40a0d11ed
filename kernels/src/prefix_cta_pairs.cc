#include "prefixd/kernels/prefix_cta_pairs.h"

#include <cstdint>

namespace prefixd::kernels {

namespace {

// The items CTA `cta` runs, in order (FirstItemOfCta / NextItemOfCta); false for a broken chain.
bool CtaItems(const std::vector<PrefixWorkItem>& items, int grid, bool chains, int cta, std::vector<int>* out) {
  const int n = int(items.size());
  out->clear();
  for (int i = cta < n ? cta : -1; i >= 0;) {
    if (i >= n || int(out->size()) >= n) return false;  // outside the list, or a loop
    out->push_back(i);
    i = chains ? items[size_t(i)].cta_next : (i + grid < n ? i + grid : -1);
  }
  return true;
}

bool SameKvWalk(const PrefixWorkItem& a, const PrefixWorkItem& b, int tile_rows) {
  const int64_t row_tiles_a = (int64_t(a.row_end) - a.row_begin + tile_rows - 1) / tile_rows;
  const int64_t row_tiles_b = (int64_t(b.row_end) - b.row_begin + tile_rows - 1) / tile_rows;
  return a.group == b.group && a.kv_head == b.kv_head && a.kv_begin == b.kv_begin && a.kv_end == b.kv_end &&
         row_tiles_a == row_tiles_b;
}

}  // namespace

bool PrefixCtaPairsShareKv(const std::vector<PrefixWorkItem>& items, int grid, int balanced_ctas, int tile_rows) {
  if (items.empty() || grid < 2 || grid % 2 != 0 || tile_rows < 1) return false;
  const bool chains = balanced_ctas == grid;
  std::vector<int> first, second;
  for (int cta = 0; cta < grid; cta += 2) {
    if (!CtaItems(items, grid, chains, cta, &first) || !CtaItems(items, grid, chains, cta + 1, &second)) return false;
    if (first.size() != second.size()) return false;
    for (size_t k = 0; k < first.size(); ++k)
      if (!SameKvWalk(items[size_t(first[k])], items[size_t(second[k])], tile_rows)) return false;
  }
  return true;
}

}  // namespace prefixd::kernels
