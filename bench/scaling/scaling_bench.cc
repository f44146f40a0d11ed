// prefixd_scaling_bench: strong and weak scaling of the distributed decode step.
//
//   mpirun -np N prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1
//   mpirun -np N prefixd_scaling_bench --mode weak --prefix-per-gpu 131072 --batch 128 --suffix 512
//
// For each GPU count g in --gpus (default 1, 2, 4, ... up to N, and N), the first g ranks form a
// sub-communicator and serve one document (the prefix, sharded evenly over the g ranks) and
// --batch requests with --suffix tokens of their own (owners spread evenly). Strong scaling keeps
// the prefix fixed; weak scaling grows it with g (--prefix-per-gpu · g). Per row:
//   step_ms      median time of a decode step (all layers), over -n steps after -w warm-up steps
//   compute_ms   the same step with every collective replaced by a no-op (results then wrong)
//   exposed_ms   step_ms − compute_ms: the communication that overlap did not hide
//   efficiency   strong: g0·T(g0) / (g · T(g));  weak: T(g0) / T(g), g0 the sweep's first GPU count
//                that ran (1 unless one GPU cannot hold the KV pool: such rows print why, no time)
//   prefix_tflops  4 · B · H_qo · P · D · layers / step time, whole job
//   mem_gib      KV bytes in use on the fullest GPU (prefix shard + suffixes)
//   host_*_ms     (always) host time per phase during the timed steps, per step: plan (make +
//                 broadcast), prepare (events, append, layouts, cascade plans, uploads), layers (all
//                 layers' enqueueing), wait (the final wait for the device)
//   bd_*_ms       (--breakdown) the same steps again with every stream synchronised at each phase
//                 boundary, so that device time lands in its phase: plan, prepare, queries,
//                 attention, reduce (all layers), and their sum fenced_ms (> step_ms: the fences
//                 remove all overlap); for attribution only
// --host-only measures the host side of a step without a GPU: a backend whose memory operations
// and kernels are no-ops (its LoadPlan validates and serialises the plan, as the CUDA backend's
// does; planner options of a 132-SM H200) and a worker that skips every device operation
// (WorkerOptions::host_only), at the GPU configuration's sizes. The plan is broadcast over MPI
// for real; step_ms is then the host time of a step (plan + prepare), compute_ms and the checks
// are skipped.
// --split computes each rank's own rows on a second stream, off the critical path (worker.h).
// --head-chunks N cuts each layer's KV heads into N chunks whose exchanges overlap the other
// chunks' compute (worker.h; all-to-all reduction only, the tree falls back to 1).
// Output: '#' metadata lines, a fixed-width table, and CSV (--csv FILE, appended with a header
// when the file is new). After the timed steps, --check requests are compared at the first and
// last layer with the single-rank unshared computation; a mismatch exits non-zero.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/fatal.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"
#include "prefixd/coordinator/engine.h"
#include "prefixd/coordinator/placement.h"
#include "prefixd/coordinator/rank_setup.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/reference.h"

namespace {

using namespace prefixd;

struct Config {
  std::string mode;  // strong | weak
  int gpus = 1;
  int64_t prefix = 0;
  int batch = 0;
  int suffix = 0;
  int layers = 1;
  int qo_heads = 32, kv_heads = 8, head_dim = 128, page_size = 16;
  kernels::DType dtype = kernels::DType::kBFloat16;
  worker::StateReduction reduction = worker::StateReduction::kAllToAll;
  int warmup = 3, iters = 10, checks = 2;
  int chunks = 1;
  bool split = false;
  bool send_first = true;  // WorkerOptions::send_before_decode
  int head_chunks = 1;
  bool breakdown = false;
  bool host_only = false;
  bool reuse_plans = true;
  bool run_ahead = true;
};

// --host-only: a backend without a device. Memory is reserved but never touched (the pool is
// virtual memory), copies and kernels are no-ops, and LoadPlan does the CUDA backend's host work
// (Validate, Serialize, one copy into a staging buffer).
class HostOnlyBackend final : public kernels::Backend {
 public:
  kernels::BackendKind kind() const override { return kernels::BackendKind::kCpu; }
  std::string Describe() const override { return "host-only (no device work)"; }
  kernels::PlanOptions DefaultPlanOptions() const override {
    // The CUDA backend's on an H200, its layout choice included (so planning costs what it costs there).
    kernels::PlanOptions o = kernels::H200PlanOptions();
    o.choose_layout = true;
    return o;
  }
  const kernels::WorkspaceLimits& limits() const override { return limits_; }
  void* Alloc(size_t bytes) override {
    void* p = std::malloc(std::max<size_t>(bytes, 1));
    if (p == nullptr) PREFIXD_THROW(ErrorKind::kOutOfMemory, "host-only backend: cannot reserve " << bytes << " bytes");
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }
  void CopyToDevice(void*, const void*, size_t) override {}
  void CopyToHost(void*, const void*, size_t) override {}
  void CopyDeviceToDevice(void*, const void*, size_t) override {}
  void Fill(void*, uint8_t, size_t) override {}
  void Synchronize() override {}
  void* stream() const override { return nullptr; }
  void LoadPlan(const kernels::CascadePlan& plan) override {
    plan.Validate();
    const std::vector<int32_t> flat = plan.Serialize();
    staging_.assign(flat.begin(), flat.end());
  }
  void RunCascade(const kernels::CascadeArgs&) override {}
  void RunCascadeParts(const kernels::CascadeArgs&, unsigned) override {}
  void RunPrefixAttention(const kernels::PrefixAttentionArgs&) override {}
  void MergeStates(const float*, const float*, int, int, int, float*, float*) override {}
  void MergeStateInPlace(float*, float*, const float*, const float*, int, int) override {}
  void CastStates(const float*, int64_t, kernels::DType, void*) override {}

 private:
  kernels::WorkspaceLimits limits_;
  std::vector<int32_t> staging_;
};

struct Row {
  Config c;
  double step_ms = 0, compute_ms = 0;
  double efficiency = NAN;
  double mem_gib = 0;
  double check_err = 0;
  bool check_ok = true;
  // Strong scaling: the checked outputs against the same configuration's 1-GPU outputs (same
  // document, requests, tokens and step; NaN where no 1-GPU row ran before this one).
  double err_vs_1gpu = NAN;
  worker::StepProfile host;     // per step, during the timed steps (ProfileMode::kHost)
  worker::StepProfile fenced;   // per step, --breakdown (ProfileMode::kFenced)
  bool has_fenced = false;
  // Set when the configuration did not run: its KV pool is larger than a GPU holds (e.g. P = 1M of
  // 32 layers on one GPU); the row is printed with the reason and left out of the CSV.
  std::string does_not_fit;
};

// Per-step means of a profile summed over p.steps steps.
worker::StepProfile PerStep(const worker::StepProfile& p) {
  worker::StepProfile o = p;
  const double n = std::max(1, p.steps);
  for (double* x : {&o.plan_ms, &o.plan_make_ms, &o.prepare_ms, &o.queries_ms, &o.attention_ms, &o.reduce_ms, &o.wait_ms, &o.total_ms})
    *x /= n;
  o.steps = 1;
  return o;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    PREFIXD_CHECK_ARG(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos,
                      "--gpus: '" << item << "' is not a positive integer (expected e.g. 1,2,4)");
    out.push_back(std::stoi(item));
  }
  return out;
}

// Times `iters` steps after `warmup` ones; collective over the engine's ranks.
// Per-step time of `iters` steps after `warmup`: the median of the steps' own times, each between
// two barriers. With the host running ahead (WorkerOptions::run_ahead) Step(t) returns once step
// t−1 has finished on the device, so the time between two returns is one step of the device (or
// of the host, whichever is slower): the median of those intervals, no barrier in between (a
// barrier per step would put the host back in lock-step), the slowest rank's median.
double TimeSteps(coordinator::Engine& engine, MPI_Comm comm, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) engine.Step();
  if (engine.worker().runs_ahead()) {
    engine.Step();  // the pipeline is full from here on
    std::vector<double> t;
    double last = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      engine.Step();
      const double now = MPI_Wtime();
      t.push_back(now - last);
      last = now;
    }
    engine.worker().Synchronize();
    double median = Median(t) * 1e3;
    PREFIXD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &median, 1, MPI_DOUBLE, MPI_MAX, comm));
    return median;
  }
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    PREFIXD_MPI_CHECK(MPI_Barrier(comm));
    const double t0 = MPI_Wtime();
    engine.Step();
    PREFIXD_MPI_CHECK(MPI_Barrier(comm));
    t.push_back(MPI_Wtime() - t0);
  }
  return Median(t) * 1e3;
}

// Relative L2 error of got against want (infinite when got has a non-finite value).
double RelError(const float* got, const float* want, size_t n) {
  double num = 0, den = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!std::isfinite(got[k])) return INFINITY;
    num += (double(got[k]) - want[k]) * (double(got[k]) - want[k]);
    den += double(want[k]) * want[k];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Rank 0: the checked outputs of 1-GPU strong-scaling rows, by configuration (everything but the
// GPU count) and layer, for the later rows of the same configuration to compare with.
std::map<std::string, std::vector<float>>& OneGpuOutputs() {
  static std::map<std::string, std::vector<float>> outputs;
  return outputs;
}

std::string OneGpuKey(const Config& c, int layer) {
  std::ostringstream k;
  k << c.prefix << "/" << c.batch << "/" << c.suffix << "/" << c.layers << "/" << c.qo_heads << "/" << c.kv_heads << "/"
    << c.head_dim << "/" << c.page_size << "/" << kernels::DTypeName(c.dtype) << "/" << c.warmup << "/" << c.iters
    << "/" << c.checks << "/" << c.breakdown << "/" << c.run_ahead << "/layer" << layer;
  return k.str();
}

// One configuration on the first c.gpus ranks of `world` (the others just wait).
Row RunConfig(const Config& c, const coordinator::RankDevice& device, double tol) {
  int world_rank = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPI_Comm sub = MPI_COMM_NULL;
  PREFIXD_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, world_rank < c.gpus ? 0 : MPI_UNDEFINED, world_rank, &sub));
  Row row;
  row.c = c;
  if (sub == MPI_COMM_NULL) return row;

  // Decode steps every request lives for: the first step, compute-only and timed runs, breakdown.
  // (TimeSteps takes one more step when the host runs ahead: the fenced breakdown never does.)
  // (Main bounds every term, so none of these overflows.)
  const int steps = 1 + 2 * (c.warmup + c.iters + (c.run_ahead ? 1 : 0)) + (c.breakdown ? c.iters : 0);
  const int64_t per_gpu_prefix = (c.prefix + c.gpus - 1) / c.gpus;
  const int64_t suffix_pages = (int64_t(c.suffix) + steps + c.page_size - 1) / c.page_size;
  const int64_t owned = (c.batch + c.gpus - 1) / c.gpus;
  const int64_t pages = (per_gpu_prefix + c.page_size - 1) / c.page_size + 2 + owned * suffix_pages + 4;
  coordinator::EngineOptions eo;
  eo.worker.pool.num_layers = c.layers;
  eo.worker.pool.num_kv_heads = c.kv_heads;
  eo.worker.pool.head_dim = c.head_dim;
  eo.worker.pool.dtype = c.dtype;
  eo.worker.pool.page_size = c.page_size;
  if (pages > std::numeric_limits<int>::max()) {
    row.does_not_fit = "does not fit: " + std::to_string(pages) + " KV pages per rank, more than one pool indexes";
    PREFIXD_MPI_CHECK(MPI_Comm_free(&sub));
    return row;
  }
  eo.worker.pool.num_pages = int(pages);
  eo.worker.num_qo_heads = c.qo_heads;
  eo.worker.reduction = c.reduction;
  eo.worker.keep_layer_outputs = true;
  eo.worker.split_own_rows = c.split;
  eo.worker.send_before_decode = c.send_first;
  eo.worker.head_chunks = c.head_chunks;
  eo.worker.host_only = c.host_only;
  eo.worker.reuse_steady_plans = c.reuse_plans;
  eo.worker.run_ahead = c.run_ahead;
  if (!c.host_only) {
    const coordinator::KvPoolRoom room = coordinator::FindKvPoolRoom(sub, device, eo.worker.pool);
    if (eo.worker.pool.num_pages > room.pages) {
      row.does_not_fit = "does not fit: " + coordinator::KvPoolShortfall(eo.worker.pool, room);
      PREFIXD_MPI_CHECK(MPI_Comm_free(&sub));
      return row;
    }
  }
  {
    std::unique_ptr<coordinator::Engine> engine_ptr;
    if (c.host_only) {
      engine_ptr = std::make_unique<coordinator::Engine>(eo, sub, std::make_unique<HostOnlyBackend>(),
                                                         comm::MakeMpiComm(sub));
      for (int i = 1; i < c.chunks; ++i) engine_ptr->worker().AddPipelineBackend(std::make_unique<HostOnlyBackend>());
      if (c.split)
        for (int i = 0; i < c.chunks; ++i) engine_ptr->worker().AddSplitBackend(std::make_unique<HostOnlyBackend>());
    } else {
      engine_ptr = coordinator::MakeEngine(eo, device, sub, c.chunks);
    }
    coordinator::Engine& engine = *engine_ptr;
    if (engine.is_coordinator()) {
      coordinator::Coordinator& coord = engine.coordinator();
      coordinator::PrefixHint hint;
      hint.shard_tokens = coordinator::SplitTokens(int32_t(c.prefix), c.gpus, c.page_size);
      const int32_t p = coord.AddPrefix(kernels::SyntheticTokens(0x5ca1e, c.prefix), &hint);
      for (int b = 0; b < c.batch; ++b)
        coord.AddRequest(coordinator::RequestSpec{p, kernels::SyntheticTokens(1000 + b, c.suffix), steps, b % c.gpus});
    }
    engine.Step();  // prefill (synthetic KV straight into the pools) and a first decode
    if (!c.host_only) {
      engine.worker().set_null_collectives(true);
      row.compute_ms = TimeSteps(engine, sub, c.warmup, c.iters);
      engine.worker().set_null_collectives(false);
    }
    // Host-side phase times of the timed steps (a few clock reads per layer; no fences). The
    // warm-up steps are left out by resetting after them.
    engine.worker().set_profile(worker::ProfileMode::kHost);
    for (int i = 0; i < c.warmup; ++i) engine.Step();
    engine.worker().ResetProfile();
    row.step_ms = TimeSteps(engine, sub, 0, c.iters);
    row.host = PerStep(engine.worker().profile());
    if (c.breakdown && !c.host_only) {
      engine.worker().set_profile(worker::ProfileMode::kFenced);
      engine.worker().ResetProfile();
      TimeSteps(engine, sub, 0, c.iters);
      row.fenced = PerStep(engine.worker().profile());
      row.has_fenced = true;
    }
    engine.worker().set_profile(worker::ProfileMode::kOff);

    const std::vector<worker::WorkerMemory> mem = engine.GatherMemory();
    const double page_bytes = double(eo.worker.pool.BytesPerPage());
    for (const auto& m : mem) row.mem_gib = std::max(row.mem_gib, page_bytes * (m.pages_prefix + m.pages_suffix) / double(1 << 30));

    // Check a few requests of the last (real) step against the single-rank computation.
    std::vector<int32_t> ids;
    for (int i = 0; i < std::min(c.checks, c.batch); ++i)
      ids.push_back(int32_t(c.checks == 1 ? 0 : int64_t(i) * (c.batch - 1) / std::max(1, c.checks - 1)));
    const int hq = c.qo_heads, d = c.head_dim;
    for (int layer : {0, c.layers - 1}) {
      if (ids.empty() || c.host_only) break;
      std::vector<float> v, s;
      engine.GatherOutputs(ids, layer, &v, &s);
      if (!engine.is_coordinator()) continue;
      // The bar's comparison: distributed against the single-GPU result (the same cascade on one
      // rank), here the 1-GPU row of the same strong-scaling configuration, if it ran before.
      if (c.mode == "strong") {
        std::vector<float>& one = OneGpuOutputs()[OneGpuKey(c, layer)];
        if (c.gpus == 1) {
          one = v;
        } else if (one.size() == v.size()) {
          const double e = RelError(v.data(), one.data(), v.size());
          row.err_vs_1gpu = std::isnan(row.err_vs_1gpu) ? e : std::max(row.err_vs_1gpu, e);
        }
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        std::vector<int32_t> prefix, suffix;
        engine.coordinator().RequestTokens(ids[i], &prefix, &suffix);
        std::vector<float> rv, rs;
        worker::ReferenceDecode(engine.worker().backend(),
                                worker::ReferenceShape{hq, c.kv_heads, d, c.page_size, c.dtype, 0.f}, prefix, suffix,
                                layer, &rv, &rs);
        const double err = RelError(v.data() + i * hq * d, rv.data(), rv.size());
        bool lse_ok = true;
        for (int h = 0; h < hq; ++h)
          lse_ok &= std::isfinite(s[i * hq + h]) && std::abs(s[i * hq + h] - rs[h]) <= tol * std::max(1.f, std::abs(rs[h]));
        row.check_err = std::max(row.check_err, lse_ok ? err : INFINITY);
        row.check_ok &= lse_ok && err <= tol;
      }
    }
  }
  MPI_Comm_free(&sub);
  return row;
}

std::string CsvHeader() {
  return "mode,gpus,prefix,batch,suffix,layers,qo_heads,kv_heads,head_dim,dtype,reduction,chunks,step_ms,compute_ms,"
         "exposed_ms,exposed_pct,efficiency,tokens_per_s,prefix_tflops,mem_gib_per_gpu,check_rel_err,split,"
         "host_plan_ms,host_prepare_ms,host_layers_ms,host_wait_ms,bd_plan_ms,bd_prepare_ms,bd_queries_ms,"
         "bd_attention_ms,bd_reduce_ms,fenced_ms,head_chunks,run_ahead,fresh_plans,rel_err_vs_1gpu,send_first";
}

std::string CsvRow(const Row& r) {
  const Config& c = r.c;
  const double exposed = r.step_ms - r.compute_ms;
  const double flops = 4.0 * c.batch * c.qo_heads * double(c.prefix) * c.head_dim * c.layers;
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s,%d,%lld,%d,%d,%d,%d,%d,%d,%s,%s,%d,%.4f,%.4f,%.4f,%.2f,%s,%.1f,%.2f,%.3f,%.3g",
                c.mode.c_str(), c.gpus, (long long)c.prefix, c.batch, c.suffix, c.layers, c.qo_heads, c.kv_heads,
                c.head_dim, kernels::DTypeName(c.dtype), worker::StateReductionName(c.reduction), c.chunks, r.step_ms,
                r.compute_ms, exposed, r.step_ms > 0 ? 100.0 * exposed / r.step_ms : 0.0,
                std::isnan(r.efficiency) ? "" : std::to_string(r.efficiency).c_str(),
                r.step_ms > 0 ? c.batch / (r.step_ms * 1e-3) : 0.0, r.step_ms > 0 ? flops / (r.step_ms * 1e-3) / 1e12 : 0.0,
                r.mem_gib, r.check_err);
  std::string out = buf;
  const worker::StepProfile& h = r.host;
  std::snprintf(buf, sizeof(buf), ",%d,%.4f,%.4f,%.4f,%.4f", c.split ? 1 : 0, h.plan_ms, h.prepare_ms,
                h.queries_ms + h.attention_ms + h.reduce_ms, h.wait_ms);
  out += buf;
  if (r.has_fenced) {
    const worker::StepProfile& f = r.fenced;
    std::snprintf(buf, sizeof(buf), ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", f.plan_ms, f.prepare_ms, f.queries_ms,
                  f.attention_ms, f.reduce_ms, f.total_ms);
    out += buf;
  } else {
    out += ",,,,,,";
  }
  out += "," + std::to_string(c.head_chunks) + "," + (c.run_ahead ? "1" : "0") + "," + (c.reuse_plans ? "0" : "1") + ",";
  if (!std::isnan(r.err_vs_1gpu)) {
    std::snprintf(buf, sizeof(buf), "%.3g", r.err_vs_1gpu);
    out += buf;
  }
  out += c.send_first ? ",1" : ",0";
  return out;
}

int Main(comm::MpiSession& session, int argc, char** argv) {
  cxxopts::Options options("prefixd_scaling_bench",
                           "Strong and weak scaling of prefixd's distributed decode step (one rank per GPU):\n"
                           "  mpirun -np N prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 "
                           "--suffix 512 --layers 1\n"
                           "  mpirun -np N prefixd_scaling_bench --mode weak --prefix-per-gpu 131072 --batch 128 "
                           "--suffix 512\n"
                           "Without a GPU the CPU backend runs, with small default sizes.\n");
  options.add_options()
      ("mode", "strong, weak or both", cxxopts::value<std::string>()->default_value("strong"))
      ("gpus", "GPU counts to run, e.g. 1,2,4 (default: 1, 2, 4, ... up to the rank count, and the rank count)",
       cxxopts::value<std::string>())
      ("prefix", "strong scaling: prefix tokens (default 262144 on GPU, 4096 on CPU)", cxxopts::value<int64_t>())
      ("prefix-per-gpu", "weak scaling: prefix tokens per GPU (default 131072 on GPU, 2048 on CPU)",
       cxxopts::value<int64_t>())
      ("batch", "requests decoding together (default 128 on GPU, 8 on CPU)", cxxopts::value<int>())
      ("suffix", "own tokens of each request before decoding (default 512 on GPU, 32 on CPU)", cxxopts::value<int>())
      ("layers", "layers per step", cxxopts::value<int>()->default_value("1"))
      ("qo-heads", "query heads (default 32 on GPU, 8 on CPU)", cxxopts::value<int>())
      ("kv-heads", "KV heads (default 8 on GPU, 2 on CPU)", cxxopts::value<int>())
      ("head-dim", "head dimension (default 128 on GPU, 64 on CPU)", cxxopts::value<int>())
      ("dtype", "bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))
      ("page-size", "tokens per KV page", cxxopts::value<int>()->default_value("16"))
      ("reduction", "a2a, tree or both", cxxopts::value<std::string>()->default_value("a2a"))
      ("chunks", "pipeline chunks per step (state exchange of one overlaps the next one's compute)",
       cxxopts::value<int>()->default_value("1"))
      ("split", "own rows last: each rank's own requests on a second stream, off the critical path "
                "(overlaps both exchanges; on 4 H200s it hides most of them at 32 layers with short shards, and "
                "is slower at 1 layer with long ones)")
      ("no-send-before-decode", "run each cascade whole before its states are sent (by default the states that "
                                "travel, rows owned elsewhere, are sent after prefix + merge and the own rows' "
                                "suffix decode overlaps the exchange; a2a without --split; worker.h)")
      ("head-chunks", "per layer, cut the KV heads into N chunks: chunk c+1's queries and chunk c's states travel "
                      "while a chunk computes (a2a only; worker.h); a list (e.g. 1,4) runs each",
       cxxopts::value<std::string>()->default_value("1"))
      ("host-only", "host side only, no GPU needed: no-op device work, real planning, uploads' host work and "
                    "plan broadcast, at the GPU sizes (default sizes as on a GPU)")
      ("fresh-plans", "plan every step from scratch (WorkerOptions::reuse_steady_plans off; by default steady "
                      "steps advance the kept cascade plans in place)")
      ("sync-steps", "the host waits for every step before preparing the next (by default it prepares step t+1 "
                     "while the device runs step t, WorkerOptions::run_ahead, and the step time is the median "
                     "interval between steps, the slowest rank's)")
      ("breakdown", "also time the steps with a fence at every phase boundary (per-phase device time)")
      ("backend", "auto, cuda or cpu", cxxopts::value<std::string>()->default_value("auto"))
      ("w,warmup", "warm-up steps per measurement (0 to 100000)", cxxopts::value<int>()->default_value("3"))
      ("n,iters", "timed steps per measurement, 1 to 100000 (the median is reported)",
       cxxopts::value<int>()->default_value("10"))
      ("check", "requests checked against the single-rank computation per row (0: none)",
       cxxopts::value<int>()->default_value("2"))
      ("csv", "append rows to this CSV file (header written when new)", cxxopts::value<std::string>())
      ("h,help", "print this help");
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    PREFIXD_THROW(ErrorKind::kInvalidArgument, "prefixd_scaling_bench: " << e.what() << " (see --help)");
  }
  const int rank = session.rank(), ranks = session.size();
  if (args.count("help")) {
    if (rank == 0) std::printf("%s\n", options.help().c_str());
    return 0;
  }
  const coordinator::RankDevice rank_device = coordinator::ChooseRankDevice(session, args["backend"].as<std::string>());
  const bool host_only = args.count("host-only") > 0;
  const bool use_cuda = rank_device.cuda || host_only;  // host-only: the GPU configuration's sizes
  auto opt = [&](const char* name, int64_t gpu_default, int64_t cpu_default) {
    return args.count(name) ? args[name].as<int64_t>() : (use_cuda ? gpu_default : cpu_default);
  };
  auto opt_int = [&](const char* name, int gpu_default, int cpu_default) {
    return args.count(name) ? args[name].as<int>() : (use_cuda ? gpu_default : cpu_default);
  };

  Config base;
  base.batch = opt_int("batch", 128, 8);
  base.suffix = opt_int("suffix", 512, 32);
  base.layers = args["layers"].as<int>();
  base.qo_heads = opt_int("qo-heads", 32, 8);
  base.kv_heads = opt_int("kv-heads", 8, 2);
  base.head_dim = opt_int("head-dim", 128, 64);
  base.page_size = args["page-size"].as<int>();
  PREFIXD_CHECK_ARG(base.page_size > 0 && base.page_size <= 4096,
                    "--page-size must be in [1, 4096], got " << base.page_size);
  base.dtype = kernels::ParseDType(args["dtype"].as<std::string>());
  base.warmup = args["warmup"].as<int>();
  base.iters = args["iters"].as<int>();
  base.checks = args["check"].as<int>();
  base.chunks = args["chunks"].as<int>();
  base.split = args.count("split") > 0;
  base.send_first = args.count("no-send-before-decode") == 0;
  const std::vector<int> head_chunk_list = ParseList(args["head-chunks"].as<std::string>());
  for (int h : head_chunk_list)
    PREFIXD_CHECK_ARG(h >= 1 && base.kv_heads % h == 0, "--head-chunks: " << h << " does not divide the KV heads");
  base.head_chunks = head_chunk_list.front();
  base.breakdown = args.count("breakdown") > 0;
  base.host_only = host_only;
  base.reuse_plans = args.count("fresh-plans") == 0;
  base.run_ahead = args.count("sync-steps") == 0;
  if (host_only) base.checks = 0;
  PREFIXD_CHECK_ARG(base.chunks >= 1 && base.chunks <= 16, "--chunks must be in [1, 16]");
  // Bounds that keep every count in range (requests' lifetimes, pages, token ids): far beyond what a
  // GPU holds, so a real sweep never meets them, and an absurd flag is refused here, not by an
  // overflow or an allocation deep inside the first row.
  constexpr int kMaxSteps = 100000, kMaxBatch = 1 << 20, kMaxSuffix = 1 << 24;
  constexpr int64_t kMaxPrefix = std::numeric_limits<int32_t>::max() / 4;  // 2^29 − 1, as in a workload
  PREFIXD_CHECK_ARG(base.iters >= 1 && base.iters <= kMaxSteps,
                    "--iters must be in [1, " << kMaxSteps << "], got " << base.iters);
  PREFIXD_CHECK_ARG(base.warmup >= 0 && base.warmup <= kMaxSteps,
                    "--warmup must be in [0, " << kMaxSteps << "], got " << base.warmup);
  PREFIXD_CHECK_ARG(base.batch >= 1 && base.batch <= kMaxBatch,
                    "--batch must be in [1, " << kMaxBatch << "], got " << base.batch);
  PREFIXD_CHECK_ARG(base.suffix >= 0 && base.suffix <= kMaxSuffix,
                    "--suffix must be in [0, " << kMaxSuffix << "], got " << base.suffix);
  PREFIXD_CHECK_ARG(base.layers >= 1, "--layers must be ≥ 1, got " << base.layers);
  const int64_t strong_prefix = opt("prefix", 262144, 4096);
  const int64_t weak_prefix = opt("prefix-per-gpu", 131072, 2048);
  // Checked here, before the table's header: the placement would refuse them only at the first row.
  PREFIXD_CHECK_ARG(strong_prefix >= 1 && weak_prefix >= 1 && strong_prefix <= kMaxPrefix &&
                        weak_prefix <= kMaxPrefix / ranks,
                    "--prefix and --prefix-per-gpu × ranks must be in [1, " << kMaxPrefix << "], got "
                                                                           << strong_prefix << " and " << weak_prefix);
  const double tol = !use_cuda ? 1e-3 : base.dtype == kernels::DType::kFloat16 ? 2e-3 : 1e-2;

  std::vector<int> gpus;
  if (args.count("gpus")) {
    gpus = ParseList(args["gpus"].as<std::string>());
  } else {
    for (int g = 1; g < ranks; g *= 2) gpus.push_back(g);
    gpus.push_back(ranks);
  }
  for (int g : gpus) PREFIXD_CHECK_ARG(g >= 1 && g <= ranks, "--gpus: " << g << " is outside 1.." << ranks << " ranks");
  const std::string mode = args["mode"].as<std::string>();
  PREFIXD_CHECK_ARG(mode == "strong" || mode == "weak" || mode == "both", "--mode must be strong, weak or both");
  const std::string red = args["reduction"].as<std::string>();
  std::vector<worker::StateReduction> reductions;
  if (red == "both") reductions = {worker::StateReduction::kAllToAll, worker::StateReduction::kTree};
  else reductions = {worker::ParseStateReduction(red)};

  if (rank == 0) {
    std::printf("# prefixd_scaling_bench: %d rank(s), backend %s%s\n", ranks, host_only ? "host-only" : use_cuda ? "cuda" : "cpu",
                use_cuda ? "" : " (no GPU: small default sizes)");
    std::printf("# batch %d, suffix %d, layers %d, heads %d/%d, head_dim %d, %s, page %d, %d pipeline chunk(s)%s, "
                "head chunks %s, %s plans; warm-up %d, %s %d steps\n",
                base.batch, base.suffix, base.layers, base.qo_heads, base.kv_heads, base.head_dim,
                kernels::DTypeName(base.dtype), base.page_size, base.chunks,
                base.split ? ", own rows split" : base.send_first ? "" : ", cascades whole before the state exchange",
                args["head-chunks"].as<std::string>().c_str(), base.reuse_plans ? "advanced" : "fresh", base.warmup,
                base.run_ahead ? "host runs ahead; median interval of" : "median of", base.iters);
    std::printf("%6s %4s %8s %5s %5s %6s %8s %10s %10s %10s %7s %6s %8s %8s %9s\n", "mode", "gpus", "prefix", "batch",
                "suffix", "layers", "red", "step_ms", "compute_ms", "exposed_ms", "exp_%", "eff", "tflops", "mem_gib",
                "check");
    std::fflush(stdout);
  }
  std::vector<Row> rows;
  int failures = 0;
  for (const std::string m : {std::string("strong"), std::string("weak")}) {
    if (mode != "both" && mode != m) continue;
    for (worker::StateReduction r : reductions) {
     for (int hcn : head_chunk_list) {
      // Efficiency against the sweep's first GPU count that ran (g0 = 1 unless one GPU cannot hold
      // the pool, as the issue allows: 2·T(2) / (N·T(N))).
      double t0 = NAN;
      int g0 = 0;
      for (int g : gpus) {
        Config c = base;
        c.head_chunks = hcn;
        c.mode = m;
        c.gpus = g;
        c.reduction = r;
        c.prefix = m == "strong" ? strong_prefix : weak_prefix * g;
        Row row = RunConfig(c, rank_device, tol);
        PREFIXD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank != 0) continue;
        if (!row.does_not_fit.empty()) {
          std::printf("%6s %4d %8lld %5d %5d %6d %3s/h%-2d   %s\n", m.c_str(), g, (long long)c.prefix, c.batch, c.suffix,
                      c.layers, worker::StateReductionName(r), hcn, row.does_not_fit.c_str());
          std::fflush(stdout);
          continue;
        }
        if (std::isnan(t0)) {
          t0 = row.step_ms;
          g0 = g;
        }
        row.efficiency = m == "strong" ? g0 * t0 / (g * row.step_ms) : t0 / row.step_ms;
        const double exposed = row.step_ms - row.compute_ms;
        const double flops = 4.0 * c.batch * c.qo_heads * double(c.prefix) * c.head_dim * c.layers;
        std::printf("%6s %4d %8lld %5d %5d %6d %3s/h%-2d %10.3f %10.3f %10.3f %7.1f %6s %8.1f %8.3f %9s\n", m.c_str(), g,
                    (long long)c.prefix, c.batch, c.suffix, c.layers, worker::StateReductionName(r), hcn, row.step_ms,
                    row.compute_ms, exposed, 100.0 * exposed / row.step_ms,
                    std::isnan(row.efficiency) ? "-" : std::to_string(row.efficiency).substr(0, 5).c_str(),
                    flops / (row.step_ms * 1e-3) / 1e12, row.mem_gib,
                    c.checks == 0 ? "skipped" : row.check_ok ? "ok" : "FAILED");
        std::fflush(stdout);
        const worker::StepProfile& hp = row.host;
        std::printf("#   host per step (ms): plan %.3f (rank 0 make+encode %.3f), prepare %.3f, layers %.3f, "
                    "wait %.3f\n", hp.plan_ms, hp.plan_make_ms, hp.prepare_ms, hp.queries_ms + hp.attention_ms + hp.reduce_ms, hp.wait_ms);
        if (row.has_fenced) {
          const worker::StepProfile& f = row.fenced;
          std::printf("#   fenced per step (ms): plan %.3f, prepare %.3f, queries %.3f, attention %.3f, reduce %.3f "
                      "= %.3f\n",
                      f.plan_ms, f.prepare_ms, f.queries_ms, f.attention_ms, f.reduce_ms, f.total_ms);
        }
        std::fflush(stdout);
        failures += row.check_ok ? 0 : 1;
        rows.push_back(row);
      }
     }
    }
  }
  if (rank == 0) {
    if (args.count("csv")) {
      const std::string path = args["csv"].as<std::string>();
      const bool fresh = !std::ifstream(path).good();
      std::ofstream out(path, std::ios::app);
      PREFIXD_CHECK_ARG(out.good(), "cannot write CSV file '" << path << "'");
      if (fresh) out << CsvHeader() << "\n";
      for (const Row& r : rows) out << CsvRow(r) << "\n";
      std::printf("# csv: %zu row(s) appended to %s\n", rows.size(), path.c_str());
    }
    double worst = 0, worst_vs_1gpu = NAN;
    for (const Row& r : rows) {
      worst = std::max(worst, r.check_err);
      if (!std::isnan(r.err_vs_1gpu)) worst_vs_1gpu = std::isnan(worst_vs_1gpu) ? r.err_vs_1gpu : std::max(worst_vs_1gpu, r.err_vs_1gpu);
    }
    std::printf("# check: %zu row(s), worst relative error %.3g (tolerance %.0e): %s\n", rows.size(), worst, tol,
                failures ? "FAILED" : "OK");
    if (!std::isnan(worst_vs_1gpu))
      std::printf("# check against the 1-GPU rows (same configuration, same step): worst relative error %.3g\n",
                  worst_vs_1gpu);
    std::fflush(stdout);
    if (failures) PREFIXD_THROW(ErrorKind::kInternal, failures << " row(s) differ from the single-rank computation");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return prefixd::comm::RunRankMain(argc, argv, [&](prefixd::comm::MpiSession& session) {
    return Main(session, argc, argv);
  });
}
