// The one main() of prefixd_mpi_tests: every rank runs every test; results are combined.
//
// - Only rank 0 prints gtest's usual report; other ranks print just their failures, each line
//   prefixed "[rank R]", so a failure on any rank is visible and attributed.
// - One failing rank fails the program (on every rank, so mpirun exits non-zero); rank 0 lists
//   which ranks failed which tests.
// - Exit 77 (ctest SKIP_RETURN_CODE) when no test passed and none failed: all skipped, e.g. NCCL
//   tests on a machine without GPUs.
// - A watchdog ends a rank whose test runs longer than PREFIXD_MPI_TEST_TIMEOUT_S (default 300):
//   a test that leaves a collective early on one rank would otherwise hang the others forever.
//
// Writing tests for it: every rank must make the same collective calls in the same order, so
// skip decisions must be collective (agree over MPI first) and results are compared with EXPECT_*
// after the collectives, not with ASSERT_* in between.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "prefixd/comm/bootstrap.h"

namespace {

// Non-zero ranks: print each failed assertion (file:line and message) and each failed test.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "unknown", result.line_number(),
                 result.message());
    std::fflush(stderr);
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, info.test_suite_name(), info.name());
    std::fflush(stderr);
  }

 private:
  int rank_;
};

// Remembers the names of failed tests, to report per rank at the end.
class FailureCollector : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    if (!failed_.empty()) failed_ += ", ";
    failed_ += std::string(info.test_suite_name()) + "." + info.name();
  }
  const std::string& failed() const { return failed_; }

 private:
  std::string failed_;
};

// Ends this rank (non-zero exit, which makes mpirun kill the job) when one test runs too long.
class Watchdog : public testing::EmptyTestEventListener {
 public:
  Watchdog(int rank, double limit_s) : rank_(rank), limit_(limit_s) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~Watchdog() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void OnTestStart(const testing::TestInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    name_ = std::string(info.test_suite_name()) + "." + info.name();
    start_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  void OnTestEnd(const testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      if (!running_) continue;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (elapsed > limit_) {
        std::fprintf(stderr,
                     "[rank %d] %s still running after %.0f s (PREFIXD_MPI_TEST_TIMEOUT_S): a rank "
                     "probably left a collective early; ending this rank so the job stops\n",
                     rank_, name_.c_str(), elapsed);
        std::fflush(stderr);
        std::_Exit(124);
      }
    }
  }

  int rank_;
  double limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stop_ = false, running_ = false;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

double TimeoutSeconds() {
  const char* env = std::getenv("PREFIXD_MPI_TEST_TIMEOUT_S");
  const double value = env != nullptr ? std::atof(env) : 0.0;
  return value > 0 ? value : 300.0;
}

int RunAndCombine(const prefixd::comm::MpiSession& session, int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rank = session.rank();
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  auto* collector = new FailureCollector;  // owned by gtest once appended
  listeners.Append(collector);
  auto* watchdog = new Watchdog(rank, TimeoutSeconds());
  listeners.Append(watchdog);

  const int gtest_rc = RUN_ALL_TESTS();
  delete listeners.Release(watchdog);  // joins its thread before MPI goes down

  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  // A failure outside any test (e.g. in a global SetUp) fails the rank too.
  const long failed = unit.failed_test_count() + (gtest_rc != 0 && unit.failed_test_count() == 0 ? 1 : 0);
  long local[3] = {failed, unit.successful_test_count(), unit.skipped_test_count()};
  long total[3] = {0, 0, 0};
  MPI_Allreduce(local, total, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

  prefixd::comm::RankStatus mine;
  mine.code = static_cast<int32_t>(failed);
  mine.message = failed > 0 && collector->failed().empty() ? "failure outside a test" : collector->failed();
  const auto statuses = prefixd::comm::GatherStatus(MPI_COMM_WORLD, mine, 0);
  if (rank == 0) {
    std::printf("[   MPI    ] %d ranks: %ld test results passed, %ld failed, %ld skipped (summed over ranks)\n",
                session.size(), total[1], total[0], total[2]);
    for (size_t r = 0; r < statuses.size(); ++r) {
      if (statuses[r].code != 0)
        std::printf("[   MPI    ] rank %zu FAILED %d test(s): %s\n", r, statuses[r].code,
                    statuses[r].message.c_str());
    }
    std::fflush(stdout);
  }
  if (total[0] > 0) return 1;
  if (total[1] == 0) return 77;  // nothing passed and nothing failed: everything skipped
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    prefixd::comm::MpiSession session(&argc, &argv);
    return RunAndCombine(session, argc, argv);  // the session finalises MPI on the way out
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prefixd_mpi_tests: %s\n", e.what());
    std::fflush(stderr);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    // A rank that cannot take part must not leave the others waiting.
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
