// EXPECT_PREFIXD_ERROR(statement, kind, substring): the statement throws prefixd::Error of that
// kind whose message mentions the substring (the culprit: a request, group, page or shape).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "prefixd/common/error.h"

#define EXPECT_PREFIXD_ERROR(statement, error_kind, substring)                                             \
  do {                                                                                                     \
    bool prefixd_thrown_ = false;                                                                          \
    try {                                                                                                  \
      statement;                                                                                           \
    } catch (const ::prefixd::Error& e) {                                                                  \
      prefixd_thrown_ = true;                                                                              \
      EXPECT_EQ(e.kind(), (error_kind)) << "wrong error kind (" << ::prefixd::ErrorKindName(e.kind())      \
                                        << "): " << e.what();                                              \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)                                 \
          << "message does not mention '" << (substring) << "': " << e.what();                             \
    }                                                                                                      \
    EXPECT_TRUE(prefixd_thrown_) << #statement " did not throw";                                           \
  } while (0)

#define EXPECT_INVALID_ARGUMENT(statement, substring) \
  EXPECT_PREFIXD_ERROR(statement, ::prefixd::ErrorKind::kInvalidArgument, substring)
