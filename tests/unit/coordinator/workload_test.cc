// The JSON-lines workload reader: the documented schema parses; every malformed line is refused
// with a message naming its line.
#include <gtest/gtest.h>

#include <sstream>

#include "prefixd/coordinator/workload.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::coordinator {
namespace {

Workload Parse(const std::string& text) {
  std::istringstream in(text);
  return ParseWorkload(in, "w.jsonl", 1000);
}

TEST(Workload, ParsesTheDocumentedSchema) {
  const Workload w = Parse(
      "# comment line\n"
      "{\"type\": \"document\", \"id\": \"manual\", \"tokens\": 300}\n"
      "\n"
      "{\"type\":\"document\",\"id\":7,\"token_ids\":[1, 2,3 ]}\r\n"
      "{\"type\": \"question\", \"document\": \"manual\", \"suffix_tokens\": 5, \"decode_steps\": 3, \"arrival_step\": 2}\n"
      "{\"type\": \"question\", \"document\": 7, \"suffix_token_ids\": [9, 8], \"decode_steps\": 1}\n"
      "{\"type\": \"question\", \"document\": \"7\", \"decode_steps\": 4}\n");
  ASSERT_EQ(w.documents.size(), 2u);
  EXPECT_EQ(w.documents[0].id, "manual");
  EXPECT_EQ(w.documents[0].tokens.size(), 300u);
  EXPECT_EQ(w.documents[0].line, 2);
  EXPECT_EQ(w.documents[1].tokens, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_EQ(w.questions.size(), 3u);
  EXPECT_EQ(w.questions[0].document, 0);
  EXPECT_EQ(w.questions[0].tokens.size(), 5u);
  EXPECT_EQ(w.questions[0].arrival_step, 2);
  EXPECT_EQ(w.questions[0].line, 5);
  EXPECT_EQ(w.questions[1].tokens, (std::vector<int32_t>{9, 8}));
  EXPECT_EQ(w.questions[1].arrival_step, 0);
  EXPECT_EQ(w.questions[2].document, 1);
  EXPECT_TRUE(w.questions[2].tokens.empty());
  EXPECT_EQ(w.total_decode_tokens(), 8);
  for (int32_t t : w.documents[0].tokens) EXPECT_TRUE(t >= 0 && t < 1000);
  // Synthetic tokens are a function of the document id: the same file means the same tokens.
  EXPECT_EQ(Parse("{\"type\": \"document\", \"id\": \"manual\", \"tokens\": 300}\n"
                  "{\"type\": \"question\", \"document\": \"manual\", \"decode_steps\": 1}\n")
                .documents[0].tokens,
            w.documents[0].tokens);
}

TEST(Workload, MalformedLinesNameTheirLine) {
  const std::string doc = "{\"type\": \"document\", \"id\": \"d\", \"tokens\": 10}\n";
  const std::string q = "{\"type\": \"question\", \"document\": \"d\", \"decode_steps\": 2}\n";
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"x\", \"decode_steps\": 2}\n"),
                          "w.jsonl:2: question about document \"x\"");
  EXPECT_INVALID_ARGUMENT(Parse(doc + doc + q), "w.jsonl:2: document \"d\" is already defined on line 1");
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"d\"}\n"), "w.jsonl:2: missing \"decode_steps\"");
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"d\", \"decode_steps\": 0}\n"),
                          "w.jsonl:2: \"decode_steps\" is 0");
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"d\", \"decode_steps\": 2, \"colour\": 1}\n"),
                          "w.jsonl:2: unknown key \"colour\"");
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"answer\"}\n"), "w.jsonl:2: unknown \"type\" \"answer\"");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": 10,}\n"), "w.jsonl:1:");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": 1.5}\n"), "w.jsonl:1: expected an integer");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": 10\n"), "w.jsonl:1: expected '}'");
  EXPECT_INVALID_ARGUMENT(Parse("[1, 2]\n"), "w.jsonl:1: expected '{'");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"token_ids\": [1, 5000]}\n" + q),
                          "w.jsonl:1: \"token_ids\"[1] is 5000");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"token_ids\": []}\n" + q), "has no tokens");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": 3, \"token_ids\": [1]}\n"),
                          "exactly one of");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": \"ten\"}\n"),
                          "\"tokens\" must be an integer");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"type\": \"document\"}\n"), "duplicate key");
  EXPECT_INVALID_ARGUMENT(Parse(doc), "no questions");
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"d\", \"decode_steps\": 2, "
                                      "\"arrival_step\": -1}\n"),
                          "w.jsonl:2: \"arrival_step\" is -1");
}

// The host holds every token id of the workload: absurd sizes are refused before anything is
// allocated (each case below would otherwise ask for 2-8 GiB).
TEST(Workload, SizesAreBoundedBeforeAllocation) {
  const std::string doc = "{\"type\": \"document\", \"id\": \"d\", \"tokens\": 10}\n";
  EXPECT_INVALID_ARGUMENT(Parse(doc + "{\"type\": \"question\", \"document\": \"d\", \"suffix_tokens\": 536870911, "
                                      "\"decode_steps\": 2}\n"),
                          "w.jsonl:2: 536870911 more tokens would take the workload past 536870911 token ids in all");
  EXPECT_INVALID_ARGUMENT(Parse("{\"type\": \"document\", \"id\": \"d\", \"tokens\": 536870912}\n"),
                          "w.jsonl:1: \"tokens\" is 536870912");
  EXPECT_INVALID_ARGUMENT(DefaultWorkload(1000, 2147483647, 0, 1, 1, 10),
                          "at most 536870911 tokens each, 4194304 questions");
  EXPECT_INVALID_ARGUMENT(DefaultWorkload(1000, 1000, 1000000, 1, 1, 10),
                          "default workload (questions): 1000000000 more tokens");
  EXPECT_INVALID_ARGUMENT(DefaultWorkload(1000, 1, 2147483647, 1, 1, 10), "default workload");
}

TEST(Workload, DefaultAndFiles) {
  const Workload w = DefaultWorkload(1000, 6, 4, 3, 2, 500);
  ASSERT_EQ(w.documents.size(), 1u);
  EXPECT_EQ(w.documents[0].tokens.size(), 1000u);
  ASSERT_EQ(w.questions.size(), 6u);
  EXPECT_EQ(w.questions[3].arrival_step, 1);
  EXPECT_NE(w.questions[0].tokens, w.questions[1].tokens);
  EXPECT_PREFIXD_ERROR(LoadWorkloadFile("/nonexistent/w.jsonl", 10), ErrorKind::kNotFound, "/nonexistent/w.jsonl");
  EXPECT_INVALID_ARGUMENT(DefaultWorkload(0, 1, 1, 1, 1, 10), "default workload");
}

}  // namespace
}  // namespace prefixd::coordinator
