#include "bench/kernel/planner_log.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "prefixd/common/error.h"

namespace prefixd::bench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> SplitAt(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::istringstream in(line);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A time column: a number, or '-' (NaN). Anything else is malformed.
bool ParseTime(const std::string& word, double* us) {
  if (word == "-") {
    *us = kNaN;
    return true;
  }
  try {
    size_t used = 0;
    *us = std::stod(word, &used);
    return used == word.size() && std::isfinite(*us) && *us > 0;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<LoggedPlannerRow> ReadPlannerLog(const std::string& path_at_page) {
  std::string path = path_at_page;
  int page_size = 16;
  if (const size_t at = path_at_page.rfind('@'); at != std::string::npos) {
    path = path_at_page.substr(0, at);
    try {
      page_size = std::stoi(path_at_page.substr(at + 1));
    } catch (const std::exception&) {
      page_size = 0;
    }
    PREFIXD_CHECK_ARG(page_size > 0, "planner log '" << path_at_page << "': the page size after '@' must be a positive "
                                                                        "integer");
  }
  std::ifstream in(path);
  PREFIXD_CHECK_ARG(in.good(), "planner log '" << path << "' cannot be read");
  std::vector<LoggedPlannerRow> rows;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    // A row: "  dtype Hqo/Hkv D B P S | cascade plain choice name... | predictions | ratio |
    // check | narrow pred | half pred | measured name m_rat2" (PrintPlannerRow); '#' lines and
    // others skipped.
    const std::vector<std::string> cols = SplitAt(line, '|');
    if (cols.size() < 2) continue;
    const std::vector<std::string> shape = Words(cols[0]);
    if (shape.size() != 6 || (shape[0] != "fp16" && shape[0] != "bf16")) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    LoggedPlannerRow r;
    r.dtype = shape[0];
    r.page_size = page_size;
    r.source = where;
    const size_t slash = shape[1].find('/');
    try {
      PREFIXD_CHECK_ARG(slash != std::string::npos, "");
      r.h_qo = std::stoi(shape[1].substr(0, slash));
      r.h_kv = std::stoi(shape[1].substr(slash + 1));
      r.head_dim = std::stoi(shape[2]);
      r.batch = std::stoi(shape[3]);
      r.prefix = std::stoi(shape[4]);
      r.suffix = std::stoi(shape[5]);
    } catch (const std::exception&) {
      PREFIXD_THROW(ErrorKind::kInvalidArgument, where << ": malformed shape '" << cols[0] << "'");
    }
    const std::vector<std::string> times = Words(cols[1]);
    const bool timed_ok = times.size() >= 4 && ParseTime(times[0], &r.cascade_us) &&
                          ParseTime(times[1], &r.plain_us) && ParseTime(times[2], &r.choice_us);
    PREFIXD_CHECK_ARG(timed_ok, where << ": malformed times '" << cols[1] << "'");
    for (size_t i = 3; i < times.size(); ++i) r.choice_name += (i > 3 ? " " : "") + times[i];
    r.narrow_us = r.half_us = kNaN;
    // The narrow and half cascades' columns (logs since session 24); older logs end before them.
    for (const auto& [col, us] : {std::pair<size_t, double*>{5, &r.narrow_us}, {6, &r.half_us}}) {
      if (cols.size() <= col) continue;
      const std::vector<std::string> words = Words(cols[col]);
      PREFIXD_CHECK_ARG(!words.empty() && ParseTime(words[0], us), where << ": malformed column '" << cols[col] << "'");
    }
    if (std::isnan(r.cascade_us)) continue;  // a row of a log made without a GPU: nothing timed
    rows.push_back(std::move(r));
  }
  PREFIXD_CHECK_ARG(!rows.empty(), "planner log '" << path << "' has no timed planner-check row");
  return rows;
}

}  // namespace prefixd::bench
