// Settings from the environment (the A/B switches and tuning knobs every module reads, e.g.
// PREFIXD_PEER_EXCHANGE, PREFIXD_DECODE_WARMUP_MIB), read one way everywhere: unset or empty gives
// the fallback; any other value must be valid, or kInvalidArgument names the variable and what it
// accepts (a typo must not silently time the wrong variant).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace prefixd {

// "0" or "1".
bool EnvFlag(const char* name, bool fallback);
// An integer in [lo, hi] (decimal; the fallback need not be in range, e.g. -1 for "not set").
int64_t EnvInteger(const char* name, int64_t lo, int64_t hi, int64_t fallback);
// A comma-separated list of one or more integers, each in [lo, hi] (e.g. "8,10,12").
std::vector<int64_t> EnvIntegerList(const char* name, int64_t lo, int64_t hi, const std::vector<int64_t>& fallback);
// One of `choices`, returned as its index.
int EnvChoice(const char* name, std::initializer_list<const char*> choices, int fallback);

}  // namespace prefixd
