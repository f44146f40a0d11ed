#include "prefixd/coordinator/registry.h"

#include "prefixd/common/error.h"
#include "prefixd/kernels/synthetic_kv.h"

namespace prefixd::coordinator {
namespace {
uint64_t HashOf(const std::vector<int32_t>& tokens) {
  return kernels::SequenceHash(tokens.data(), int64_t(tokens.size()));
}
}  // namespace

int32_t PrefixRegistry::Find(const std::vector<int32_t>& tokens) const {
  auto [begin, end] = by_hash_.equal_range(HashOf(tokens));
  for (auto it = begin; it != end; ++it)
    if (*tokens_.at(it->second) == tokens) return it->second;
  return -1;
}

int32_t PrefixRegistry::Insert(const std::vector<int32_t>& tokens) {
  const int32_t id = next_id_++;
  by_hash_.emplace(HashOf(tokens), id);
  tokens_.emplace(id, std::make_shared<const std::vector<int32_t>>(tokens));
  return id;
}

void PrefixRegistry::Erase(int32_t id) {
  auto it = tokens_.find(id);
  if (it == tokens_.end()) PREFIXD_THROW(ErrorKind::kNotFound, "prefix registry: unknown prefix " << id);
  auto [begin, end] = by_hash_.equal_range(HashOf(*it->second));
  for (auto h = begin; h != end; ++h)
    if (h->second == id) {
      by_hash_.erase(h);
      break;
    }
  tokens_.erase(it);
}

std::shared_ptr<const std::vector<int32_t>> PrefixRegistry::shared_tokens(int32_t id) const {
  auto it = tokens_.find(id);
  if (it == tokens_.end()) PREFIXD_THROW(ErrorKind::kNotFound, "prefix registry: unknown prefix " << id);
  return it->second;
}

}  // namespace prefixd::coordinator
