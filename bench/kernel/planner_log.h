// The rows of a `prefixd_kernel_bench --planner-check` log read back: each shape with the step
// times the GPU measured for its layouts. What the offline fit (`--fit-logs`) fits the cost model
// to, so that a planner check already run on the device serves as a calibration too
// (bench/NOTES-planner.md, session 83).
#pragma once

#include <string>
#include <vector>

namespace prefixd::bench {

struct LoggedPlannerRow {
  std::string dtype;  // "fp16" or "bf16"
  int h_qo = 0, h_kv = 0, head_dim = 0, batch = 0, prefix = 0, suffix = 0;
  int page_size = 16;  // not in the row: the log's, as the caller names it (PATH@N)
  // Measured whole-step µs; NaN where the log has '-' (not timed: the layout equals the cascade,
  // or the shape has no such layout).
  double cascade_us, plain_us, choice_us, narrow_us, half_us;
  std::string choice_name;  // the model's choice as the log names it ("cascade", "plain", "cascade t66 k20 tma")
  std::string source;       // PATH:LINE
};

// The timed rows of one log given as PATH or PATH@PAGE_SIZE (the log does not record its page size;
// 16 where not given). Throws kInvalidArgument naming the file where it cannot be read, where a row
// is malformed, or where it holds no timed row (a log made without a GPU has '-' for every time).
std::vector<LoggedPlannerRow> ReadPlannerLog(const std::string& path_at_page);

}  // namespace prefixd::bench
