// The prefix registry: token ids → prefix id. Identical token sequences get the same id, so a
// document asked about by many requests is stored (and its KV made) once.
//
// Exact-sequence matching on a 64-bit chain hash with a full comparison on a hit. (A radix tree
// of KV chunks, seed 002, would also share a common head of two different documents; exact
// matching is what the document-QA workload needs and keeps the one-copy invariant obvious.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace prefixd::coordinator {

class PrefixRegistry {
 public:
  // The id of a prefix with exactly these tokens, or −1.
  int32_t Find(const std::vector<int32_t>& tokens) const;
  // Registers a new sequence (the caller checked Find first) under a fresh id.
  int32_t Insert(const std::vector<int32_t>& tokens);
  // Forgets a prefix; throws kNotFound for an unknown id.
  void Erase(int32_t id);
  bool Contains(int32_t id) const { return tokens_.count(id) != 0; }
  // Throws kNotFound for an unknown id.
  const std::vector<int32_t>& tokens(int32_t id) const { return *shared_tokens(id); }
  // The same tokens, shareable beyond the prefix's life (a finished request's last check).
  std::shared_ptr<const std::vector<int32_t>> shared_tokens(int32_t id) const;
  size_t size() const { return tokens_.size(); }

 private:
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  std::map<int32_t, std::shared_ptr<const std::vector<int32_t>>> tokens_;
  int32_t next_id_ = 0;
};

}  // namespace prefixd::coordinator
