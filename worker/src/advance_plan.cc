// AdvanceCascadePlan: see prefixd/worker/advance_plan.h (moved out of worker.cc unchanged, apart
// from page_size and the scratch buffer becoming arguments, so that it can be tested on its own).
#include "prefixd/worker/advance_plan.h"

namespace prefixd::worker {

bool AdvanceCascadePlan(kernels::CascadePlan* plan, const std::vector<const RequestInfo*>& rows, int page_size,
                        std::vector<int32_t>* old_len, std::vector<int32_t>* scratch) {
  const int ps = page_size;
  kernels::PageTable& t = plan->suffix;
  if (int(rows.size()) != t.num_seqs()) return false;
  old_len->assign(rows.size(), 0);
  // Every owned row grew by exactly one token (rows of requests owned elsewhere have no suffix
  // here). Only its page table row and the end of the decode items ending at the old length
  // change: last_page_len + 1, or, entering a new page, that page appended with last_page_len 1.
  // A row whose suffix was empty has no decode item to extend: plan again.
  bool new_page = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == nullptr) continue;
    const int64_t len = t.SeqLen(int(i), ps);
    if (rows[i]->length != len + 1 || len == 0) return false;
    (*old_len)[i] = int32_t(len);
    new_page |= len % ps == 0;
  }
  if (new_page) {
    std::vector<int32_t>& idx = *scratch;
    idx.clear();
    int32_t begin = t.indptr[0];  // the old indptr[i] (indptr is rewritten as we go)
    for (size_t i = 0; i < rows.size(); ++i) {
      const int32_t end = t.indptr[i + 1];
      idx.insert(idx.end(), t.indices.begin() + begin, t.indices.begin() + end);
      begin = end;
      const int32_t len = (*old_len)[i];
      if (rows[i] != nullptr && len % ps == 0) idx.push_back(rows[i]->pages[len / ps]);
      t.indptr[i + 1] = int32_t(idx.size());
    }
    t.indices.swap(idx);
  }
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] != nullptr) t.last_page_len[i] = (*old_len)[i] % ps == 0 ? 1 : t.last_page_len[i] + 1;
  for (kernels::DecodeWorkItem& d : plan->decode_items)
    if (rows[d.request] != nullptr && d.kv_end == (*old_len)[d.request]) ++d.kv_end;
  return true;
}

}  // namespace prefixd::worker
