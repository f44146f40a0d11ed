// The distributed engine against the single-process, unshared computation, on any rank count.
//
// Every case builds an Engine over MPI_COMM_WORLD (CPU backend, MpiComm), admits prefixes and
// requests on rank 0, runs decode steps, and after each step gathers every decoded request's
// final states of every layer to rank 0, which recomputes them one request at a time with
// worker::ReferenceDecode: the whole sequence as one private suffix on a fresh pool, no sharing,
// no shards, no communication. Identical tokens give identical synthetic K/V, so the two must
// agree to fp32 rounding (relative error ≤ 1e-3; NaN never passes).
//
// Shapes come from rank 0's seed (broadcast), so every rank builds the same engine; admission
// decisions are rank 0's alone, as in the real service. Each case stays small: CI runs this under
// mpirun -np 1, 2, 3, 4 and 8 on two cores.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/common/error.h"
#include "prefixd/coordinator/engine.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/reference.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::coordinator {
namespace {

using kernels::DType;
using worker::StateReduction;

int WorldSize() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

uint64_t SharedSeed() {
  uint64_t seed = test::TestSeed();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

struct Shape {
  int layers = 2;
  int hq = 4;
  int hkv = 2;
  int d = 64;
  int page = 4;
  int pages = 600;
  DType dtype = DType::kBFloat16;
};

Shape RandomShape(std::mt19937_64& rng) {
  Shape s;
  const int gqa[] = {1, 2, 4, 3, 5};  // 3 and 5: groups no decode kernel is compiled for (DecodeSlicing)
  s.hkv = 1 + int(rng() % 2);
  s.hq = s.hkv * gqa[rng() % 5];
  s.d = rng() % 2 ? 64 : 128;
  s.page = rng() % 2 ? 4 : 8;
  s.layers = 1 + int(rng() % 2);
  s.dtype = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
  return s;
}

std::vector<int32_t> RandomTokens(std::mt19937_64& rng, int n) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 32000);
  return t;
}

class Harness {
 public:
  Harness(const Shape& s, StateReduction reduction, int chunks, bool cuda, int32_t shard_min_tokens, bool split = false,
          int head_chunks = 1, bool run_ahead = false, bool send_first = false, int choose_layout = -1,
          double measured_tie_band = -1)
      : shape_(s), cuda_(cuda) {
    EngineOptions o;
    o.worker.pool.num_layers = s.layers;
    o.worker.pool.num_pages = s.pages;
    o.worker.pool.page_size = s.page;
    o.worker.pool.num_kv_heads = s.hkv;
    o.worker.pool.head_dim = s.d;
    o.worker.pool.dtype = s.dtype;
    o.worker.num_qo_heads = s.hq;
    o.worker.reduction = reduction;
    o.worker.split_own_rows = split;
    o.worker.send_before_decode = send_first;
    o.worker.choose_layout = choose_layout;
    if (measured_tie_band >= 0) {  // the layout choice's near ties timed, within this band
      o.worker.measure_plan_choice = 1;
      o.worker.measured_choice.tie_band = measured_tie_band;
    }
    o.worker.head_chunks = head_chunks;
    o.worker.run_ahead = run_ahead;
    o.placement.shard_min_tokens = shard_min_tokens;
    o.seed = 977;
    if (cuda) {
      kernels::BackendOptions bo;
      bo.device = comm::DeviceForLocalRank(comm::NodeLocalRank(MPI_COMM_WORLD).rank, comm::CudaDeviceCount());
      auto backend = kernels::MakeCudaBackend(bo);
      auto data = comm::MakeNcclComm(MPI_COMM_WORLD, bo.device, backend->stream());
      engine_ = std::make_unique<Engine>(o, MPI_COMM_WORLD, std::move(backend), std::move(data));
      for (int c = 1; c < chunks; ++c) engine_->worker().AddPipelineBackend(kernels::MakeCudaBackend(bo));
      if (split)
        for (int c = 0; c < chunks; ++c) engine_->worker().AddSplitBackend(kernels::MakeCudaBackend(bo));
      ref_backend_ = kernels::MakeCudaBackend(bo);
    } else {
      engine_ = std::make_unique<Engine>(o, MPI_COMM_WORLD, kernels::MakeCpuBackend(), comm::MakeMpiComm(MPI_COMM_WORLD));
      for (int c = 1; c < chunks; ++c) engine_->worker().AddPipelineBackend(kernels::MakeCpuBackend());
      if (split)
        for (int c = 0; c < chunks; ++c) engine_->worker().AddSplitBackend(kernels::MakeCpuBackend());
      ref_backend_ = kernels::MakeCpuBackend();
    }
  }

  bool root() const { return engine_->is_coordinator(); }
  Coordinator& coord() { return engine_->coordinator(); }
  Engine& engine() { return *engine_; }

  // One step, then every decoded request checked at every layer. Collective.
  void StepAndCheck(const std::string& what) {
    const worker::StepPlan& plan = engine_->Step();
    std::vector<int32_t> ids;
    for (const auto& e : plan.decode) ids.push_back(e.request_id);
    const int hq = shape_.hq, d = shape_.d;
    worker::ReferenceShape rs{hq, shape_.hkv, d, shape_.page, shape_.dtype, 0.f};
    for (int layer = 0; layer < shape_.layers; ++layer) {
      std::vector<float> v, s;
      engine_->GatherOutputs(ids, layer, &v, &s);
      if (!root()) continue;
      for (size_t i = 0; i < ids.size(); ++i) {
        std::vector<int32_t> prefix, suffix;
        coord().RequestTokens(ids[i], &prefix, &suffix);
        std::vector<float> rv, rsum;
        worker::ReferenceDecode(*ref_backend_, rs, prefix, suffix, layer, &rv, &rsum);
        const std::vector<double> want_v(rv.begin(), rv.end()), want_s(rsum.begin(), rsum.end());
        const std::string where = what + ", step " + std::to_string(plan.step) + ", request " +
                                  std::to_string(ids[i]) + ", layer " + std::to_string(layer);
        // CPU: both sides are fp32 loops. GPU: the reference runs other kernels (one long
        // suffix, no prefix kernel), which round P to the input dtype differently.
        const double tol = cuda_ ? test::OutputTolerance(shape_.dtype) : 1e-3;
        test::ExpectAllClose(v.data() + i * hq * d, want_v.data(), int64_t(hq) * d, tol, where + " (v)");
        test::ExpectLseClose(s.data() + i * hq, want_s.data(), hq, 1e-3, where + " (s)");
        ++checked_;
      }
    }
  }

  int checked() const { return checked_; }

 private:
  Shape shape_;
  bool cuda_ = false;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<kernels::Backend> ref_backend_;
  int checked_ = 0;
};

// Every rank has its own GPU (decided on all ranks together, so that all skip or none does).
bool AllRanksHaveGpu() {
  const int devices = comm::CudaDeviceCount();
  int ok = comm::NcclBuilt() && kernels::CudaAvailable() && devices >= comm::NodeLocalRank(MPI_COMM_WORLD).size;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return ok != 0;
}

// Parameters: the state reduction, the worker's schedule ("chunksN": the step cut into N
// pipeline chunks; "splitN": the same with own rows computed last, on their own backend;
// "sendfirstN": N chunks, the states that travel sent before the own rows' decode; "behindN": the
// same with the own rows' decode waiting for the prefix kernel only (WorkerOptions::
// decode_behind_prefix: prefix and merge parts then run as two calls); "besideN": the same with
// the own rows' decode beside the prefix kernel on the side stream (decode_beside_prefix; CUDA);
// "headsN": each layer's KV heads cut into N head chunks, with GQA and H_kv a multiple of N; the
// tree reduction runs those without head chunks), and the
// backend: "cpu" (CPU backend + MpiComm, what CI runs) or "cuda" (CUDA backend + NcclComm, one GPU
// per rank; skipped elsewhere).
class EngineTest : public testing::TestWithParam<std::tuple<StateReduction, std::string, std::string>> {
 protected:
  void SetUp() override {
    if (cuda() && !AllRanksHaveGpu()) GTEST_SKIP() << "needs one CUDA GPU per rank (and NCCL) on every rank";
    seed_ = SharedSeed();
    rng_.seed(seed_);
    // Read by each Worker at construction (the Harness of the test body).
    // behindN: the decode behind the prefix kernel, not beside it (decode_beside_prefix would take
    // precedence wherever the decode reads no prefix state).
    if (behind()) setenv("PREFIXD_DECODE_BEHIND_PREFIX", "1", 1), setenv("PREFIXD_DECODE_BESIDE_PREFIX", "0", 1);
    // besideN: without fused merges, so that no decode item reads prefix states and the decode
    // may run beside the prefix kernel (its own rows' merge must then still wait for the prefix).
    if (beside()) {
      setenv("PREFIXD_DECODE_BEHIND_PREFIX", "0", 1), setenv("PREFIXD_DECODE_BESIDE_PREFIX", "1", 1);
      setenv("PREFIXD_FUSE_MERGE", "0", 1);
    }
    // layoutN expects the model's plain choices, which a measured choice may overrule.
    if (layout()) setenv("PREFIXD_MEASURED_CHOICE", "0", 1);
  }
  void TearDown() override {
    unsetenv("PREFIXD_DECODE_BEHIND_PREFIX");
    unsetenv("PREFIXD_DECODE_BESIDE_PREFIX");
    unsetenv("PREFIXD_FUSE_MERGE");
    unsetenv("PREFIXD_MEASURED_CHOICE");
  }
  bool behind() const { return std::get<1>(GetParam()).rfind("behind", 0) == 0; }
  bool beside() const { return std::get<1>(GetParam()).rfind("beside", 0) == 0; }
  StateReduction reduction() const { return std::get<0>(GetParam()); }
  bool split() const { return std::get<1>(GetParam()).rfind("split", 0) == 0; }
  // "layoutN": send first, with the planner's layout choice on (the CPU backend's default is off):
  // the tests' short prefixes are then planned as plain decode, whose rows owned elsewhere have
  // decode items, so their states are not final after prefix + merge (Chunk::send_needs_decode).
  bool layout() const { return std::get<1>(GetParam()).rfind("layout", 0) == 0; }
  // The "sendfirst" schedules keep every group a cascade (so that send-before-decode runs where the
  // test expects it); the others plan as their backend's default says (the layout choice on for CUDA).
  // "measuredN": the layout choice on and every alternative to its choice timed as a near tie
  // (kernels::MeasuredPlanner with an unbounded tie band; the tests' prefixes of a few pages are
  // no near ties in the H200 model), on the CPU backend too.
  bool measured() const { return std::get<1>(GetParam()).rfind("measured", 0) == 0; }
  double measured_tie_band() const { return measured() ? 1e9 : -1; }
  int layout_choice() const {
    if (layout() || measured()) return 1;
    return std::get<1>(GetParam()).rfind("sendfirst", 0) == 0 || behind() || beside() ? 0 : -1;
  }
  bool send_first() const {
    return std::get<1>(GetParam()).rfind("sendfirst", 0) == 0 || behind() || beside() || layout();
  }
  int head_chunks() const {
    const std::string& m = std::get<1>(GetParam());
    return m.rfind("heads", 0) == 0 ? std::stoi(m.substr(5)) : 1;
  }
  int chunks() const {
    const std::string& m = std::get<1>(GetParam());
    if (head_chunks() > 1) return 1;
    return std::stoi(m.substr(m.find_first_of("0123456789")));
  }
  // A random shape; with head chunks, H_kv = N or 2N KV heads and a GQA group of 2 or 4.
  Shape NewShape() {
    Shape s = RandomShape(rng_);
    const int hc = head_chunks();
    if (hc > 1) {
      s.hkv = hc * (1 + int(rng_() % 2));
      s.hq = s.hkv * (rng_() % 2 ? 2 : 4);
      s.d = 64;
    }
    return s;
  }
  bool cuda() const { return std::get<2>(GetParam()) == "cuda"; }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

std::string Describe(const Shape& s, uint64_t seed) {
  return "seed " + std::to_string(seed) + ", layers " + std::to_string(s.layers) + ", heads " + std::to_string(s.hq) +
         "/" + std::to_string(s.hkv) + ", d " + std::to_string(s.d) + ", page " + std::to_string(s.page) + ", " +
         kernels::DTypeName(s.dtype);
}

// A per-rank counter summed over every rank (each rank then checks the job's total).
int64_t SumOverRanks(int64_t mine) {
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return mine;
}

// One prefix cut into balanced shards over every rank (auto placement), several requests.
TEST_P(EngineTest, EvenSplit) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  const int n = WorldSize();
  Harness h(shape, reduction(), chunks(), cuda(), 1, split(), head_chunks(), false, send_first(), layout_choice(),
            measured_tie_band());
  if (h.root()) {
    const int len = shape.page * n * (2 + int(rng_() % 4));  // whole pages on every rank
    const int32_t p = h.coord().AddPrefix(RandomTokens(rng_, len));
    EXPECT_EQ(int(h.coord().prefixes().at(p).holders.size()), n);
    for (int r = 0; r < 2 + int(rng_() % 4); ++r)
      h.coord().AddRequest(RequestSpec{p, RandomTokens(rng_, int(rng_() % 7)), 3, -1});
  }
  for (int step = 0; step < 3; ++step) h.StepAndCheck("even split");
  if (h.root()) EXPECT_GT(h.checked(), 0);
  // The split schedule really ran somewhere: a rank that owns a request and computes another's.
  int used = 0;
  for (int c = 0; c < h.engine().worker().num_pipeline_chunks(); ++c) used |= h.engine().worker().last_split(c);
  MPI_Allreduce(MPI_IN_PLACE, &used, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (split() && n > 1 && chunks() == 1) EXPECT_TRUE(used) << "no rank ran the split schedule";
  if (!split()) EXPECT_FALSE(used);
  // Send before decode ran wherever it applies: a rank that computes rows of requests it does not own
  // (every rank here, with more than one) and owns a request with a suffix.
  const int64_t sent_first = SumOverRanks(h.engine().worker().layers_sent_before_decode());
  if (send_first() && !layout() && n > 1 && reduction() == StateReduction::kAllToAll) EXPECT_GT(sent_first, 0);
  const int64_t behind_prefix = SumOverRanks(h.engine().worker().layers_decode_behind_prefix());
  if (behind() && n > 1 && reduction() == StateReduction::kAllToAll) EXPECT_GT(behind_prefix, 0);
  if (!behind()) EXPECT_EQ(behind_prefix, 0);
  if (!send_first()) EXPECT_EQ(sent_first, 0);
  // The decode beside the prefix kernel needs the side stream (CUDA only) and send first.
  const int64_t beside_prefix = SumOverRanks(h.engine().worker().layers_decode_beside_prefix());
  if (!cuda() || !send_first() || behind()) EXPECT_EQ(beside_prefix, 0);
  if (beside() && cuda() && n > 1 && reduction() == StateReduction::kAllToAll)
    EXPECT_GT(beside_prefix, 0) << "no layer ran its decode beside the prefix kernel";
  // The K/V append ran on the decode's side stream (CUDA only: the CPU backend has no streams)
  // wherever the first layer sends first with one chunk.
  const int64_t append_on_side = SumOverRanks(h.engine().worker().appends_on_decode_stream());
  if (cuda() && send_first() && !layout() && n > 1 && chunks() == 1 && reduction() == StateReduction::kAllToAll)
    EXPECT_GT(append_on_side, 0) << "no append ran on the decode stream";
  if (!cuda() || !send_first() || reduction() == StateReduction::kTree) EXPECT_EQ(append_on_side, 0);
  // layout1: some rank planned a group as plain decode with rows owned elsewhere (the case that
  // must not be sent before its decode), on the CPU backend as on CUDA.
  const int64_t plain_sent = SumOverRanks(h.engine().worker().chunks_with_sent_rows_decoding());
  if (layout() && n > 1) EXPECT_GT(plain_sent, 0) << "the layout choice planned no group as plain decode";
  // The K/V append ran behind the first layer's query exchange where that applies (one request
  // chunk, not split, whole heads: the tree reduction always has them).
  const int64_t behind = SumOverRanks(h.engine().worker().appends_behind_queries());
  const bool whole_heads = head_chunks() == 1 || reduction() == StateReduction::kTree;
  if (n > 1 && chunks() == 1 && !split() && whole_heads) EXPECT_GT(behind, 0) << "no append ran behind the queries";
  if (!whole_heads) EXPECT_EQ(behind, 0);
  // Head chunks ran with the all-to-all reduction; the tree falls back to whole heads.
  EXPECT_EQ(h.engine().worker().last_head_chunks(), reduction() == StateReduction::kAllToAll ? head_chunks() : 1);
  // measuredN: some rank timed a near tie (the short prefixes here are near ties of plain decode and
  // the cascade in the H200 model), and the outputs above were checked whatever it kept.
  const int64_t timed = SumOverRanks(h.engine().worker().plan_choices_timed());
  if (measured()) EXPECT_GT(timed, 0) << "no near tie was timed";
  else if (layout() || !cuda()) EXPECT_EQ(timed, 0);  // off: forced (layoutN) or the CPU default
}

// One prefix over every rank and the same number of requests owned by each (the scaling
// benchmark's case): the query exchange runs as an all-gather (WorkerOptions::queries_all_gather)
// wherever queries move in place, and the outputs still match.
TEST_P(EngineTest, EvenOwnersGatherQueries) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  const int n = WorldSize();
  Harness h(shape, reduction(), chunks(), cuda(), 1, split(), head_chunks(), false, send_first(), layout_choice());
  if (h.root()) {
    const int32_t p = h.coord().AddPrefix(RandomTokens(rng_, shape.page * n * (2 + int(rng_() % 3))));
    std::vector<int> owners;
    const int per_rank = 1 + int(rng_() % 3);
    for (int i = 0; i < per_rank * n; ++i) owners.push_back(i % n);
    std::shuffle(owners.begin(), owners.end(), rng_);
    for (int owner : owners) h.coord().AddRequest(RequestSpec{p, RandomTokens(rng_, 1 + int(rng_() % 6)), 3, owner});
  }
  for (int step = 0; step < 3; ++step) h.StepAndCheck("even owners");
  if (h.root()) EXPECT_GT(h.checked(), 0);
  const int64_t gathered = SumOverRanks(h.engine().worker().layers_queries_all_gathered());
  const bool in_place = !split() && (head_chunks() == 1 || reduction() == StateReduction::kTree);
  if (n > 1 && chunks() == 1 && in_place) EXPECT_GT(gathered, 0) << "no query exchange ran as an all-gather";
  if (n == 1 || !in_place) EXPECT_EQ(gathered, 0);
}

// Uneven shards, chosen by hint: random sizes (not page multiples), rank 1 (if any) empty.
TEST_P(EngineTest, UnevenSplitWithEmptyShard) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  const int n = WorldSize();
  Harness h(shape, reduction(), chunks(), cuda(), 1 << 30, split(), head_chunks(), false, send_first(), layout_choice());
  if (h.root()) {
    PrefixHint hint;
    int total = 0;
    for (int r = 0; r < n; ++r) {
      const int t = r == 1 ? 0 : 1 + int(rng_() % 40);
      hint.shard_tokens.push_back(t);
      total += t;
    }
    const int32_t p = h.coord().AddPrefix(RandomTokens(rng_, total), &hint);
    // Owners everywhere, including the rank without a shard (its requests need every state).
    for (int r = 0; r < n; ++r) h.coord().AddRequest(RequestSpec{p, RandomTokens(rng_, 1 + int(rng_() % 5)), 2, r});
  }
  for (int step = 0; step < 2; ++step) h.StepAndCheck("uneven split");
  if (h.root()) EXPECT_GT(h.checked(), 0);
}

// A prefix of fewer pages than ranks: auto placement uses as many ranks as pages; a hint spreads
// single tokens (one page each) over every rank.
TEST_P(EngineTest, MoreRanksThanPrefixPages) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  const int n = WorldSize();
  Harness h(shape, reduction(), chunks(), cuda(), 1, split(), head_chunks(), false, send_first(), layout_choice());
  if (h.root()) {
    const int32_t a = h.coord().AddPrefix(RandomTokens(rng_, shape.page + 1));  // 2 pages
    EXPECT_EQ(int(h.coord().prefixes().at(a).holders.size()), std::min(n, 2));
    PrefixHint hint;
    hint.shard_tokens.assign(n, 1);
    const int32_t b = h.coord().AddPrefix(RandomTokens(rng_, n), &hint);
    for (int i = 0; i < 3; ++i) {
      h.coord().AddRequest(RequestSpec{a, RandomTokens(rng_, int(rng_() % 3)), 2, -1});
      h.coord().AddRequest(RequestSpec{b, RandomTokens(rng_, int(rng_() % 3)), 2, -1});
    }
  }
  for (int step = 0; step < 2; ++step) h.StepAndCheck("more ranks than pages");
  if (h.root()) EXPECT_GT(h.checked(), 0);
}

// Several prefixes at once: sharded, whole on one rank, and requests without a prefix.
TEST_P(EngineTest, SeveralPrefixes) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  Harness h(shape, reduction(), chunks(), cuda(), 48, split(), head_chunks(), false, send_first(), layout_choice());
  if (h.root()) {
    const int32_t big = h.coord().AddPrefix(RandomTokens(rng_, 150 + int(rng_() % 100)));   // sharded
    const int32_t small = h.coord().AddPrefix(RandomTokens(rng_, 10 + int(rng_() % 30)));   // whole
    const int32_t small2 = h.coord().AddPrefix(RandomTokens(rng_, 10 + int(rng_() % 30)));  // whole
    EXPECT_EQ(h.coord().prefixes().at(small).holders.size(), 1u);
    const int32_t ids[] = {big, small, small2, -1};
    for (int i = 0; i < 9; ++i)
      h.coord().AddRequest(RequestSpec{ids[rng_() % 4], RandomTokens(rng_, 1 + int(rng_() % 6)), 3, -1});
  }
  for (int step = 0; step < 3; ++step) h.StepAndCheck("several prefixes");
  if (h.root()) EXPECT_GT(h.checked(), 0);
}

// Requests join and leave between steps (suffixes grow meanwhile); a prefix is freed on every
// rank when its last request leaves and its pages are reused; in the end every page is free.
TEST_P(EngineTest, JoinLeaveAndFree) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  Harness h(shape, reduction(), chunks(), cuda(), 24, split(), head_chunks(), false, send_first(), layout_choice());
  int32_t doc = -1;
  if (h.root()) {
    doc = h.coord().AddPrefix(RandomTokens(rng_, 60 + int(rng_() % 60)));
    h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, 3), 5, -1});
    h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, 2), 2, -1});
  }
  h.StepAndCheck("join/leave, step 0");
  if (h.root()) {
    h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, 4), 3, -1});  // joins mid-flight
    h.coord().ReleasePrefix(doc);  // from now on only its requests keep it alive
  }
  h.StepAndCheck("join/leave, step 1");  // request 1 finishes here
  if (h.root()) h.coord().RemoveRequest(0);  // leaves early
  h.StepAndCheck("join/leave, step 2");
  h.StepAndCheck("join/leave, step 3");  // request 2 finishes: the document's last request
  h.engine().Step();                     // its removal (and the document's) is applied
  if (h.root()) {
    EXPECT_TRUE(h.coord().prefixes().empty());
    // A new document reuses the freed pages.
    const int32_t d2 = h.coord().AddPrefix(RandomTokens(rng_, 40));
    h.coord().AddRequest(RequestSpec{d2, RandomTokens(rng_, 2), 2, -1});
    h.coord().ReleasePrefix(d2);
  }
  h.StepAndCheck("join/leave, new document");
  h.StepAndCheck("join/leave, new document");
  h.engine().Step();
  const std::vector<worker::WorkerMemory> mem = h.engine().GatherMemory();
  if (h.root()) {
    EXPECT_TRUE(h.coord().prefixes().empty());
    EXPECT_TRUE(h.coord().requests().empty());
    for (size_t r = 0; r < mem.size(); ++r) {
      EXPECT_EQ(mem[r].pages_prefix, 0) << "rank " << r;
      EXPECT_EQ(mem[r].pages_suffix, 0) << "rank " << r;
    }
    for (const RankLoad& l : h.coord().Loads()) EXPECT_EQ(l.free_pages, shape.pages);
    EXPECT_GT(h.checked(), 0);
  }
}

// Steady decoding (the worker's fast path: the same requests step after step, plans advanced in
// place and re-planned when a suffix enters a new page) against the single-rank reference at every
// step: prompts of every length modulo the page, so that page boundaries fall on different steps;
// quiet stretches, a request joining, one leaving early, one finishing.
// The host one step ahead of the device (WorkerOptions::run_ahead; CUDA only, the CPU backend
// runs synchronously anyway): many steps enqueued back to back with no check (so no sync) in
// between, a join and a leave applied while a step is in flight, suffixes crossing pages; then
// every request checked at every layer, which covers every token appended on the way (their K/V
// are part of the attention checked).
TEST_P(EngineTest, RunAheadManySteps) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  Harness h(shape, reduction(), chunks(), cuda(), 1, split(), head_chunks(), /*run_ahead=*/true, send_first(), layout_choice());
  int32_t doc = -1;
  if (h.root()) {
    doc = h.coord().AddPrefix(RandomTokens(rng_, shape.page * WorldSize() * 2 + 5));
    for (int r = 0; r < 3 + shape.page; ++r)
      h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, r), 4 * shape.page + 8, -1});
  }
  for (int step = 0; step < shape.page + 3; ++step) h.engine().Step();
  h.StepAndCheck("run-ahead, quiet");
  for (int step = 0; step < 3; ++step) h.engine().Step();
  if (h.root()) h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, 2), 2 * shape.page + 4, -1});  // joins
  for (int step = 0; step < shape.page + 1; ++step) h.engine().Step();
  if (h.root()) h.coord().RemoveRequest(2);  // leaves while the last step may still run
  for (int step = 0; step < shape.page; ++step) h.engine().Step();
  h.StepAndCheck("run-ahead, after a join and a leave");
  if (h.root()) EXPECT_GT(h.checked(), 0);
}

TEST_P(EngineTest, SteadyDecodeAcrossPages) {
  const Shape shape = NewShape();
  SCOPED_TRACE(Describe(shape, seed_));
  Harness h(shape, reduction(), chunks(), cuda(), 1, split(), head_chunks(), false, send_first(), layout_choice());
  const int steps = 2 * shape.page + 3;
  int32_t doc = -1;
  if (h.root()) {
    doc = h.coord().AddPrefix(RandomTokens(rng_, shape.page * WorldSize() * 2 + 3));
    for (int r = 0; r < 2 + shape.page; ++r)  // prompt lengths 0 .. page + 1
      h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, r), steps + 4, -1});
  }
  for (int step = 0; step < shape.page + 2; ++step) h.StepAndCheck("steady, quiet");
  if (h.root()) h.coord().AddRequest(RequestSpec{doc, RandomTokens(rng_, 1), shape.page + 1, -1});  // joins
  for (int step = 0; step < 3; ++step) h.StepAndCheck("steady, after a join");
  if (h.root()) h.coord().RemoveRequest(1);  // leaves early
  for (int step = 0; step < steps - shape.page - 5; ++step) h.StepAndCheck("steady, after a leave");
  const int64_t advanced = SumOverRanks(h.engine().worker().plans_advanced());
  EXPECT_GT(advanced, 0) << "no step advanced a kept plan (the steady path never ran)";
  // Quiet steps went out as deltas; joins and leaves as full plans.
  EXPECT_GT(h.engine().delta_steps(), 0);
  EXPECT_GE(h.engine().full_steps(), 3);
  if (h.root()) {
    h.coord().ReleasePrefix(doc);
    EXPECT_GT(h.checked(), 0);
  }
}

// Refused admissions change nothing: the admitted requests decode on, unchanged.
TEST_P(EngineTest, RefusedAdmissionDisturbsNothing) {
  Shape shape;
  shape.pages = 40;
  if (head_chunks() > 1) {
    shape.hkv = head_chunks();
    shape.hq = 2 * shape.hkv;
  }
  Harness h(shape, reduction(), chunks(), cuda(), 8, split(), head_chunks(), false, send_first(), layout_choice());
  if (h.root()) {
    const int32_t p = h.coord().AddPrefix(RandomTokens(rng_, 30));
    h.coord().AddRequest(RequestSpec{p, RandomTokens(rng_, 3), 3, -1});
    const auto before = h.coord().Loads();
    EXPECT_THROW(h.coord().AddRequest(RequestSpec{p, RandomTokens(rng_, 3), 100000, -1}), prefixd::Error);
    EXPECT_THROW(h.coord().AddRequest(RequestSpec{p + 17, {1}, 1, -1}), prefixd::Error);
    EXPECT_THROW(h.coord().AddPrefix(RandomTokens(rng_, 40 * 4 * WorldSize() + 1)), prefixd::Error);
    const auto after = h.coord().Loads();
    for (size_t r = 0; r < before.size(); ++r) EXPECT_EQ(before[r].free_pages, after[r].free_pages);
  }
  for (int step = 0; step < 3; ++step) h.StepAndCheck("after refusals");
  if (h.root()) EXPECT_EQ(h.checked(), 3 * shape.layers);
}

// WorkerOptions::choose_layout takes -1, 0 or 1; anything else is refused when the engine is made,
// on every rank (CPU backend).
TEST(EngineOptions, RefusesAnUnknownLayoutChoice) {
  std::mt19937_64 rng(SharedSeed());
  const Shape shape = RandomShape(rng);
  for (const int choice : {2, -2}) {
    SCOPED_TRACE("choose_layout " + std::to_string(choice));
    EXPECT_INVALID_ARGUMENT(Harness(shape, StateReduction::kAllToAll, 1, /*cuda=*/false, 1, false, 1, false, false, choice),
                            "choose_layout");
  }
}

// PREFIXD_MEASURED_CHOICE takes 0 or 1 (unset: WorkerOptions::measure_plan_choice); anything else is
// refused when the engine is made, naming the variable (CPU backend).
TEST(EngineOptions, RefusesAnUnknownMeasuredChoiceSetting) {
  std::mt19937_64 rng(SharedSeed());
  const Shape shape = RandomShape(rng);
  for (const char* value : {"2", "yes"}) {
    SCOPED_TRACE(std::string("PREFIXD_MEASURED_CHOICE=") + value);
    setenv("PREFIXD_MEASURED_CHOICE", value, 1);
    EXPECT_INVALID_ARGUMENT(Harness(shape, StateReduction::kAllToAll, 1, /*cuda=*/false, 1), "PREFIXD_MEASURED_CHOICE");
    unsetenv("PREFIXD_MEASURED_CHOICE");
  }
}

INSTANTIATE_TEST_SUITE_P(Reductions, EngineTest,
                         testing::Combine(testing::Values(StateReduction::kAllToAll, StateReduction::kTree),
                                          testing::Values("chunks1", "chunks3", "split1", "split2", "heads2", "heads4", "sendfirst1",
                                                          "sendfirst3", "behind1", "beside1", "layout1", "measured1"),
                                          testing::Values("cpu", "cuda")),
                         [](const testing::TestParamInfo<std::tuple<StateReduction, std::string, std::string>>& info) {
                           return std::get<2>(info.param) + "_" + worker::StateReductionName(std::get<0>(info.param)) +
                                  "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace prefixd::coordinator
