// The document-QA workload the main job serves: documents (shared prefixes) and questions about
// them (each a request: its own suffix tokens, a number of decode steps, an arrival step).
//
// File format: JSON lines, one flat object per line (blank lines and lines starting with '#'
// are skipped). Values are integers, strings, or arrays of integers; no nesting.
//
//   {"type": "document", "id": "manual", "tokens": 131072}           token count: synthetic ids
//   {"type": "document", "id": "memo", "token_ids": [101, 7, 4093]}  explicit token ids
//   {"type": "question", "document": "manual", "suffix_tokens": 32, "decode_steps": 32,
//    "arrival_step": 0}
//   {"type": "question", "document": "memo", "suffix_token_ids": [5, 6], "decode_steps": 4}
//
// Document ids may be strings or integers. "arrival_step" defaults to 0; a question may give
// "suffix_tokens" (a count; synthetic ids) or "suffix_token_ids" or neither (no own prompt).
// Synthetic ids are a pure function of the document id / question line, so a workload file
// always means the same tokens. Anything else (unknown keys or types, a question about an
// unknown document, a duplicate document id, counts out of range, malformed JSON) is refused with
// kInvalidArgument naming the source and line; so is a workload past 2^29 − 1 token ids in all
// (documents and question suffixes, all held on the host) or 2^22 questions, before it is built.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace prefixd::coordinator {

struct WorkloadDocument {
  std::string id;
  std::vector<int32_t> tokens;
  int line = 0;
};

struct WorkloadQuestion {
  int document = 0;                // index into Workload::documents
  std::vector<int32_t> tokens;     // its own prompt
  int32_t decode_steps = 1;
  int64_t arrival_step = 0;
  int line = 0;
};

struct Workload {
  std::string description;
  std::vector<WorkloadDocument> documents;
  std::vector<WorkloadQuestion> questions;
  int64_t total_decode_tokens() const;
};

// `source` names the input in error messages (a file name).
Workload ParseWorkload(std::istream& in, const std::string& source, int32_t vocab);
Workload LoadWorkloadFile(const std::string& path, int32_t vocab);

// The embedded default: one document of doc_tokens tokens, `questions` questions of
// question_tokens tokens each decoding decode_steps tokens; question i arrives at step
// i % arrival_spread (requests join while others decode).
Workload DefaultWorkload(int64_t doc_tokens, int questions, int question_tokens, int decode_steps,
                         int arrival_spread, int32_t vocab);

}  // namespace prefixd::coordinator
