// internal::EnvSwitch: the Comms' on/off environment switches, read one way (internal.h).
#include <cstdlib>
#include <string>

#include "internal.h"
#include "prefixd/common/error.h"

namespace prefixd::comm::internal {

bool EnvSwitch(const char* name, bool fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  const std::string v = env;
  PREFIXD_CHECK_ARG(v == "0" || v == "1", name << " must be 0 or 1, got '" << v << "'");
  return v == "1";
}

}  // namespace prefixd::comm::internal
