// The entry point every single-process prefixd tool shares (the probes and benchmarks under
// bench/; the MPI programs use comm::RunRankMain): runs the tool's body and turns an exception
// that escapes it (bad input, a failed CUDA call) into one line on stderr, "<tool>: <message>",
// and the tool's error exit status, instead of std::terminate.
//
//   int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_x", Run, argc, argv); }
#pragma once

namespace prefixd {

// body(argc, argv)'s return value, or error_exit after printing what an exception said.
int RunToolMain(const char* tool, int (*body)(int, char**), int argc, char** argv, int error_exit = 2);

}  // namespace prefixd
