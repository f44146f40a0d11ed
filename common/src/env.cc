// EnvFlag, EnvInteger, EnvIntegerList, EnvChoice (prefixd/common/env.h).
#include "prefixd/common/env.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "prefixd/common/error.h"

namespace prefixd {
namespace {

// The variable's value, or null when unset or empty.
const char* Value(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || *env == '\0' ? nullptr : env;
}

}  // namespace

bool EnvFlag(const char* name, bool fallback) { return EnvChoice(name, {"0", "1"}, fallback ? 1 : 0) == 1; }

int64_t EnvInteger(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* env = Value(name);
  if (env == nullptr) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  PREFIXD_CHECK_ARG(end != env && *end == '\0' && v >= lo && v <= hi,
                    name << " must be an integer in [" << lo << ", " << hi << "], got '" << env << "'");
  return v;
}

std::vector<int64_t> EnvIntegerList(const char* name, int64_t lo, int64_t hi, const std::vector<int64_t>& fallback) {
  const char* env = Value(name);
  if (env == nullptr) return fallback;
  std::vector<int64_t> values;
  const char* at = env;
  for (;;) {
    char* end = nullptr;
    const long long v = std::strtoll(at, &end, 10);
    // strtoll skips leading blanks; the list takes none.
    const bool blank = std::isspace(static_cast<unsigned char>(*at)) != 0;
    PREFIXD_CHECK_ARG(end != at && !blank && v >= lo && v <= hi && (*end == ',' || *end == '\0'),
                      name << " must be a comma-separated list of integers in [" << lo << ", " << hi << "], got '"
                           << env << "'");
    values.push_back(v);
    if (*end == '\0') return values;
    at = end + 1;
  }
}

int EnvChoice(const char* name, std::initializer_list<const char*> choices, int fallback) {
  const char* env = Value(name);
  if (env == nullptr) return fallback;
  int index = 0;
  std::string accepted;
  for (const char* choice : choices) {
    if (std::strcmp(env, choice) == 0) return index;
    accepted += (index == 0 ? "" : index + 1 == int(choices.size()) ? " or " : ", ") + std::string(choice);
    ++index;
  }
  PREFIXD_THROW(ErrorKind::kInvalidArgument, name << " must be " << accepted << ", got '" << env << "'");
}

}  // namespace prefixd
