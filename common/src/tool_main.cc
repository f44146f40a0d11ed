#include "prefixd/common/tool_main.h"

#include <cstdio>
#include <exception>
#include <new>

#include "prefixd/common/error.h"

namespace prefixd {

int RunToolMain(const char* tool, int (*body)(int, char**), int argc, char** argv, int error_exit) {
  try {
    return body(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: %s\n", tool, kHostOutOfMemoryMessage);
    return error_exit;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return error_exit;
  }
}

}  // namespace prefixd
