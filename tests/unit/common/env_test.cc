// prefixd/common/env.h: the one reader of the environment's settings.
#include "prefixd/common/env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "unit/kernels/expect_error.h"

namespace prefixd {
namespace {

constexpr const char* kName = "PREFIXD_ENV_TEST_SETTING";

class Env : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kName); }
  void Set(const char* value) { setenv(kName, value, 1); }
};

TEST_F(Env, UnsetOrEmptyGivesTheFallback) {
  for (const bool empty : {false, true}) {
    if (empty) Set("");
    EXPECT_TRUE(EnvFlag(kName, true));
    EXPECT_FALSE(EnvFlag(kName, false));
    EXPECT_EQ(EnvInteger(kName, 0, 8, -1), -1);  // the fallback need not be in range
    EXPECT_EQ(EnvIntegerList(kName, 0, 8, {3, 9}), (std::vector<int64_t>{3, 9}));
    EXPECT_EQ(EnvChoice(kName, {"a", "b"}, 1), 1);
  }
}

TEST_F(Env, ValidValues) {
  Set("0");
  EXPECT_FALSE(EnvFlag(kName, true));
  EXPECT_EQ(EnvInteger(kName, 0, 8, 5), 0);
  Set("1");
  EXPECT_TRUE(EnvFlag(kName, false));
  Set("8");
  EXPECT_EQ(EnvInteger(kName, 0, 8, 5), 8);
  Set("-3");
  EXPECT_EQ(EnvInteger(kName, -3, 3, 0), -3);
  EXPECT_EQ(EnvIntegerList(kName, -3, 8, {}), (std::vector<int64_t>{-3}));
  Set("8,1,8");
  EXPECT_EQ(EnvIntegerList(kName, 0, 8, {}), (std::vector<int64_t>{8, 1, 8}));
  Set("plain");
  EXPECT_EQ(EnvChoice(kName, {"overlap", "plain"}, 0), 1);
}

TEST_F(Env, BadValuesNameTheVariableAndWhatItTakes) {
  for (const char* bad : {"2", "yes", " 1", "1 "}) {
    Set(bad);
    EXPECT_INVALID_ARGUMENT(EnvFlag(kName, true), "PREFIXD_ENV_TEST_SETTING must be 0 or 1");
  }
  for (const char* bad : {"9", "-1", "4x", "x", "1e3"}) {
    Set(bad);
    EXPECT_INVALID_ARGUMENT(EnvInteger(kName, 0, 8, 0), "must be an integer in [0, 8]");
  }
  for (const char* bad : {"9", "1,9", "1,", ",1", "1,,2", "1;2", " 1", "1, 2", "1,\n2", "1 ", "x"}) {
    Set(bad);
    EXPECT_INVALID_ARGUMENT(EnvIntegerList(kName, 0, 8, {}), "must be a comma-separated list of integers in [0, 8]");
  }
  Set("last");
  EXPECT_INVALID_ARGUMENT(EnvChoice(kName, {"normal", "first", "last2"}, 0), "must be normal, first or last2, got 'last'");
}

}  // namespace
}  // namespace prefixd
