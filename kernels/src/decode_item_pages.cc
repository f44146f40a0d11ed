#include "prefixd/kernels/decode_item_pages.h"

#include "prefixd/common/error.h"

namespace prefixd::kernels {

void WriteDecodeItemPages(const CascadePlan& plan, int32_t* out) {
  PREFIXD_CHECK_INTERNAL(plan.page_size > 0, "WriteDecodeItemPages: the plan has no page size");
  const PageTable& table = plan.suffix;
  for (const DecodeWorkItem& item : plan.decode_items) {
    const int first_slot = item.kv_begin / plan.page_size;
    const int num_pages = table.num_pages(item.request);
    for (int k = 0; k < kDecodeItemPageInts; ++k) {
      const int slot = first_slot + k;
      *out++ = slot < num_pages ? table.indices[size_t(table.indptr[size_t(item.request)] + slot)] : -1;
    }
  }
}

}  // namespace prefixd::kernels
