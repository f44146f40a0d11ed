#include "prefixd/common/tool_main.h"

#include <cstdio>
#include <exception>

namespace prefixd {

int RunToolMain(const char* tool, int (*body)(int, char**), int argc, char** argv, int error_exit) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return error_exit;
  }
}

}  // namespace prefixd
