#include "prefixd/coordinator/workload.h"

#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "prefixd/common/error.h"
#include "prefixd/kernels/synthetic_kv.h"

namespace prefixd::coordinator {
namespace {

// One value of a flat JSON object.
struct Value {
  enum Kind { kInt, kString, kIntArray } kind = kInt;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> a;
};

// A minimal parser for one line holding one flat JSON object: {"key": value, ...} with values
// integers, strings (with the usual escapes) or arrays of integers.
class LineParser {
 public:
  LineParser(const std::string& text, const std::string& where) : t_(text), where_(where) {}

  std::map<std::string, Value> ParseObject() {
    std::map<std::string, Value> out;
    Skip();
    Expect('{');
    Skip();
    if (Peek() == '}') {
      ++p_;
    } else {
      for (;;) {
        Skip();
        const std::string key = ParseString();
        Skip();
        Expect(':');
        Skip();
        if (out.count(key)) Fail("duplicate key \"" + key + "\"");
        out[key] = ParseValue();
        Skip();
        if (Peek() == ',') {
          ++p_;
          continue;
        }
        Expect('}');
        break;
      }
    }
    Skip();
    if (p_ != t_.size()) Fail("unexpected text after the object");
    return out;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    PREFIXD_THROW(ErrorKind::kInvalidArgument, where_ << ": " << what << " (column " << p_ + 1 << ")");
  }
  char Peek() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  void Skip() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'" + (p_ < t_.size() ? "" : " before the end of the line"));
    ++p_;
  }
  std::string ParseString() {
    Expect('"');
    std::string s;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (c == '\\') {
        if (p_ >= t_.size()) break;
        const char e = t_[p_++];
        switch (e) {
          case '"': case '\\': case '/': c = e; break;
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          default: Fail(std::string("unsupported escape \\") + e);
        }
      }
      s += c;
    }
    Expect('"');
    return s;
  }
  int64_t ParseInt() {
    const size_t start = p_;
    if (Peek() == '-') ++p_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) Fail("expected an integer");
    while (std::isdigit(static_cast<unsigned char>(Peek()))) ++p_;
    if (Peek() == '.' || Peek() == 'e' || Peek() == 'E') Fail("expected an integer, not a fraction");
    const std::string digits = t_.substr(start, p_ - start);
    if (digits.size() > 18) Fail("integer " + digits + " is out of range");
    return std::stoll(digits);
  }
  Value ParseValue() {
    Value v;
    const char c = Peek();
    if (c == '"') {
      v.kind = Value::kString;
      v.s = ParseString();
    } else if (c == '[') {
      v.kind = Value::kIntArray;
      ++p_;
      Skip();
      if (Peek() == ']') {
        ++p_;
        return v;
      }
      for (;;) {
        Skip();
        v.a.push_back(ParseInt());
        Skip();
        if (Peek() == ',') {
          ++p_;
          continue;
        }
        Expect(']');
        break;
      }
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      v.i = ParseInt();
    } else {
      Fail("expected an integer, a string or an array of integers");
    }
    return v;
  }

  const std::string& t_;
  const std::string& where_;
  size_t p_ = 0;
};

class Fields {
 public:
  Fields(std::map<std::string, Value> f, std::string where) : f_(std::move(f)), where_(std::move(where)) {}
  bool Has(const std::string& key) const { return f_.count(key) != 0; }
  const Value& Get(const std::string& key, Value::Kind kind) {
    auto it = f_.find(key);
    PREFIXD_CHECK_ARG(it != f_.end(), where_ << ": missing \"" << key << "\"");
    PREFIXD_CHECK_ARG(it->second.kind == kind, where_ << ": \"" << key << "\" must be "
                                                      << (kind == Value::kInt      ? "an integer"
                                                          : kind == Value::kString ? "a string"
                                                                                   : "an array of integers"));
    used_.insert(key);
    return it->second;
  }
  int64_t Int(const std::string& key, int64_t lo, int64_t hi) {
    const int64_t v = Get(key, Value::kInt).i;
    PREFIXD_CHECK_ARG(v >= lo && v <= hi, where_ << ": \"" << key << "\" is " << v << ", outside [" << lo << ", " << hi << "]");
    return v;
  }
  std::string Id(const std::string& key) {
    auto it = f_.find(key);
    PREFIXD_CHECK_ARG(it != f_.end(), where_ << ": missing \"" << key << "\"");
    used_.insert(key);
    if (it->second.kind == Value::kString) return it->second.s;
    PREFIXD_CHECK_ARG(it->second.kind == Value::kInt, where_ << ": \"" << key << "\" must be a string or an integer");
    return std::to_string(it->second.i);
  }
  std::vector<int32_t> TokenIds(const std::string& key, int32_t vocab) {
    const Value& v = Get(key, Value::kIntArray);
    std::vector<int32_t> out;
    out.reserve(v.a.size());
    for (size_t i = 0; i < v.a.size(); ++i) {
      PREFIXD_CHECK_ARG(v.a[i] >= 0 && v.a[i] < vocab, where_ << ": \"" << key << "\"[" << i << "] is " << v.a[i]
                                                               << ", outside the vocabulary [0, " << vocab << ")");
      out.push_back(int32_t(v.a[i]));
    }
    return out;
  }
  void CheckAllUsed() const {
    for (const auto& [key, value] : f_)
      PREFIXD_CHECK_ARG(used_.count(key), where_ << ": unknown key \"" << key << "\"");
  }

 private:
  std::map<std::string, Value> f_;
  std::set<std::string> used_;
  std::string where_;
};

constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max() / 4;
// The whole workload's token ids (documents and question suffixes) are held on the host: at most
// kMaxTokens of them (2 GiB), and at most kMaxQuestions questions, so that an absurd count is a
// clear refusal rather than the host running out of memory while the workload is built.
constexpr int64_t kMaxWorkloadTokens = kMaxTokens;
constexpr int64_t kMaxQuestions = int64_t(1) << 22;

// Adds n token ids to the workload's running total, or refuses them naming `where`.
void CountTokens(int64_t& total, int64_t n, const std::string& where) {
  PREFIXD_CHECK_ARG(n <= kMaxWorkloadTokens - total,
                    where << ": " << n << " more tokens would take the workload past " << kMaxWorkloadTokens
                          << " token ids in all (documents and questions; " << total << " so far)");
  total += n;
}

// FNV-1a of the id, mixed: the same id means the same synthetic tokens on every platform.
uint64_t DocumentStream(const std::string& id) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
  return kernels::SplitMix64(h);
}

}  // namespace

int64_t Workload::total_decode_tokens() const {
  int64_t n = 0;
  for (const WorkloadQuestion& q : questions) n += q.decode_steps;
  return n;
}

Workload ParseWorkload(std::istream& in, const std::string& source, int32_t vocab) {
  Workload w;
  w.description = source;
  std::map<std::string, int> doc_index;
  std::string text;
  int line = 0;
  int64_t total_tokens = 0;
  while (std::getline(in, text)) {
    ++line;
    size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos || text[first] == '#') continue;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const std::string where = source + ":" + std::to_string(line);
    Fields f(LineParser(text, where).ParseObject(), where);
    const std::string type = f.Get("type", Value::kString).s;
    if (type == "document") {
      WorkloadDocument d;
      d.id = f.Id("id");
      d.line = line;
      PREFIXD_CHECK_ARG(!doc_index.count(d.id), where << ": document \"" << d.id << "\" is already defined on line "
                                                      << w.documents[doc_index[d.id]].line);
      PREFIXD_CHECK_ARG(f.Has("tokens") != f.Has("token_ids"),
                        where << ": a document needs exactly one of \"tokens\" (a count) and \"token_ids\"");
      if (f.Has("tokens")) {
        const int64_t n = f.Int("tokens", 1, kMaxTokens);
        CountTokens(total_tokens, n, where);
        d.tokens = kernels::SyntheticTokens(DocumentStream(d.id), n, vocab);
      } else {
        d.tokens = f.TokenIds("token_ids", vocab);
        CountTokens(total_tokens, int64_t(d.tokens.size()), where);
      }
      PREFIXD_CHECK_ARG(!d.tokens.empty(), where << ": document \"" << d.id << "\" has no tokens");
      doc_index[d.id] = int(w.documents.size());
      w.documents.push_back(std::move(d));
    } else if (type == "question") {
      PREFIXD_CHECK_ARG(int64_t(w.questions.size()) < kMaxQuestions,
                        where << ": more than " << kMaxQuestions << " questions in one workload");
      WorkloadQuestion q;
      q.line = line;
      const std::string doc = f.Id("document");
      auto it = doc_index.find(doc);
      PREFIXD_CHECK_ARG(it != doc_index.end(), where << ": question about document \"" << doc
                                                     << "\", which no earlier line defines");
      q.document = it->second;
      PREFIXD_CHECK_ARG(!(f.Has("suffix_tokens") && f.Has("suffix_token_ids")),
                        where << ": give \"suffix_tokens\" or \"suffix_token_ids\", not both");
      if (f.Has("suffix_tokens")) {
        const int64_t n = f.Int("suffix_tokens", 0, kMaxTokens);
        CountTokens(total_tokens, n, where);
        q.tokens = kernels::SyntheticTokens(DocumentStream(doc) ^ kernels::SplitMix64(uint64_t(line)), n, vocab);
      } else if (f.Has("suffix_token_ids")) {
        q.tokens = f.TokenIds("suffix_token_ids", vocab);
        CountTokens(total_tokens, int64_t(q.tokens.size()), where);
      }
      q.decode_steps = int32_t(f.Int("decode_steps", 1, kMaxTokens));
      if (f.Has("arrival_step")) q.arrival_step = f.Int("arrival_step", 0, int64_t(1) << 40);
      w.questions.push_back(std::move(q));
    } else {
      PREFIXD_THROW(ErrorKind::kInvalidArgument,
                    where << ": unknown \"type\" \"" << type << "\" (expected \"document\" or \"question\")");
    }
    f.CheckAllUsed();
  }
  PREFIXD_CHECK_ARG(!w.questions.empty(), source << ": the workload has no questions");
  return w;
}

Workload LoadWorkloadFile(const std::string& path, int32_t vocab) {
  std::ifstream in(path);
  if (!in) PREFIXD_THROW(ErrorKind::kNotFound, "cannot open workload file '" << path << "'");
  return ParseWorkload(in, path, vocab);
}

Workload DefaultWorkload(int64_t doc_tokens, int questions, int question_tokens, int decode_steps, int arrival_spread,
                         int32_t vocab) {
  PREFIXD_CHECK_ARG(doc_tokens >= 1 && doc_tokens <= kMaxTokens && questions >= 1 && questions <= kMaxQuestions &&
                        question_tokens >= 0 && question_tokens <= kMaxTokens && decode_steps >= 1 &&
                        decode_steps <= kMaxTokens && arrival_spread >= 1,
                    "default workload: bad sizes (document " << doc_tokens << " tokens, " << questions << " questions of "
                                                             << question_tokens << " tokens, " << decode_steps
                                                             << " decode steps, arrivals over " << arrival_spread
                                                             << " steps; at most " << kMaxTokens
                                                             << " tokens each, " << kMaxQuestions << " questions)");
  int64_t total_tokens = 0;
  CountTokens(total_tokens, doc_tokens, "default workload");
  CountTokens(total_tokens, int64_t(questions) * question_tokens, "default workload (questions)");
  Workload w;
  std::ostringstream desc;
  desc << "default: 1 document of " << doc_tokens << " tokens, " << questions << " questions of " << question_tokens
       << " tokens decoding " << decode_steps << " tokens each, arriving over steps 0.." << arrival_spread - 1;
  w.description = desc.str();
  WorkloadDocument d;
  d.id = "default";
  d.tokens = kernels::SyntheticTokens(DocumentStream(d.id), doc_tokens, vocab);
  w.documents.push_back(std::move(d));
  for (int i = 0; i < questions; ++i) {
    WorkloadQuestion q;
    q.document = 0;
    q.tokens = kernels::SyntheticTokens(DocumentStream("default") ^ kernels::SplitMix64(uint64_t(i) + 1), question_tokens, vocab);
    q.decode_steps = decode_steps;
    q.arrival_step = i % arrival_spread;
    w.questions.push_back(std::move(q));
  }
  return w;
}

}  // namespace prefixd::coordinator
