// prefixd: the document-QA service as one MPI job (`mpirun -np N prefixd ...`, one rank per GPU).
//
// Rank 0 runs the coordinator and a worker; every other rank a worker. Documents are shared
// prefixes (one copy of their KV in the whole job, long ones sharded over the ranks), questions
// are requests that arrive at given steps, decode their tokens one step at a time and leave.
// The job prints progress, throughput and step latency, each rank's memory, and checks sampled
// requests against a single-rank, unshared computation; it exits non-zero if any check fails or
// any rank fails (comm::RunRankMain).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/fatal.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"
#include "prefixd/coordinator/engine.h"
#include "prefixd/coordinator/rank_setup.h"
#include "prefixd/coordinator/workload.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/worker/reference.h"

namespace {

using namespace prefixd;
using coordinator::Engine;
using coordinator::Workload;

constexpr int32_t kVocab = 128256;

// Sizes of the embedded default workload and model: the GPU configuration, and a small
// one that takes seconds on the CPU backend.
struct Defaults {
  int64_t doc_tokens;
  int questions, question_tokens, decode_steps, arrival_spread;
  int layers, qo_heads, kv_heads, head_dim;
  int32_t shard_min_tokens;
};
constexpr Defaults kGpuDefaults{131072, 64, 32, 32, 8, 32, 32, 8, 128, 8192};
constexpr Defaults kCpuDefaults{2048, 8, 8, 4, 2, 2, 8, 2, 64, 256};

// How a question is named in messages: its workload line, or its index in the embedded workload.
std::string QuestionName(const coordinator::WorkloadQuestion& q, int index) {
  return q.line > 0 ? "question (line " + std::to_string(q.line) + ")" : "question " + std::to_string(index);
}

template <typename T>
T Opt(const cxxopts::ParseResult& args, const char* name, T fallback) {
  return args.count(name) ? args[name].as<T>() : fallback;
}

// Pages per rank enough for the workload: its documents spread over the ranks (or whole, when
// short) and every question's suffix, with room for imbalance.
int AutoPagesPerRank(const Workload& w, int ranks, int page_size, int32_t shard_min_tokens) {
  auto pages = [&](int64_t tokens) { return (tokens + page_size - 1) / page_size; };
  int64_t prefix = 0, biggest_whole = 0, suffix = 0, biggest_suffix = 0;
  for (const auto& d : w.documents) {
    if (int64_t(d.tokens.size()) >= 2 * int64_t(shard_min_tokens)) prefix += pages(int64_t(d.tokens.size()));
    else biggest_whole = std::max(biggest_whole, pages(int64_t(d.tokens.size())));
  }
  int64_t whole_total = 0;
  for (const auto& d : w.documents)
    if (int64_t(d.tokens.size()) < 2 * int64_t(shard_min_tokens)) whole_total += pages(int64_t(d.tokens.size()));
  for (const auto& q : w.questions) {
    const int64_t p = pages(int64_t(q.tokens.size()) + q.decode_steps);
    suffix += p;
    biggest_suffix = std::max(biggest_suffix, p);
  }
  const int64_t per_rank = (prefix + ranks - 1) / ranks + int64_t(w.documents.size()) +
                           std::max(biggest_whole, (whole_total + ranks - 1) / ranks) +
                           2 * ((suffix + ranks - 1) / ranks) + biggest_suffix;
  return int(std::min<int64_t>(per_rank + per_rank / 8 + 16, (int64_t(1) << 31) - 1));
}

int Main(comm::MpiSession& session, int argc, char** argv) {
  cxxopts::Options options(
      "prefixd",
      "Distributed prefix-sharing attention for long-document QA. Run one rank per GPU:\n"
      "  mpirun -np N prefixd [options]     (launch/run-local.sh does this on one host)\n"
      "Documents are shared prefixes stored once (long ones sharded over the ranks); questions\n"
      "decode against them. K/V and queries are synthetic (a deterministic function of the\n"
      "tokens; no model weights). Without --workload, an embedded default is served: on GPUs\n"
      "a 131072-token document, 64 questions x 32 tokens, 32 decode steps, 32 layers, 32/8\n"
      "heads, head_dim 128, bf16; on the CPU backend (no GPU) SMALL sizes: a 2048-token\n"
      "document, 8 questions x 8 tokens, 4 decode steps, 2 layers, 8/2 heads, head_dim 64.\n"
      "Size flags override either.\n\n"
      "Workload file: JSON lines, e.g.\n"
      "  {\"type\": \"document\", \"id\": \"manual\", \"tokens\": 131072}\n"
      "  {\"type\": \"document\", \"id\": \"memo\", \"token_ids\": [101, 7, 4093]}\n"
      "  {\"type\": \"question\", \"document\": \"manual\", \"suffix_tokens\": 32, \"decode_steps\": 32, "
      "\"arrival_step\": 0}\n"
      "  {\"type\": \"question\", \"document\": \"memo\", \"suffix_token_ids\": [5, 6], \"decode_steps\": 4}\n");
  options.add_options()
      ("workload", "JSON-lines workload file (default: the embedded workload)", cxxopts::value<std::string>())
      ("doc-tokens", "embedded workload: document length in tokens", cxxopts::value<int64_t>())
      ("questions", "embedded workload: number of questions", cxxopts::value<int>())
      ("question-tokens", "embedded workload: tokens of each question", cxxopts::value<int>())
      ("decode-steps", "embedded workload: tokens each question decodes", cxxopts::value<int>())
      ("arrival-spread", "embedded workload: questions arrive over steps 0..N-1", cxxopts::value<int>())
      ("layers", "model layers", cxxopts::value<int>())
      ("qo-heads", "query heads: a multiple of --kv-heads (any group size)", cxxopts::value<int>())
      ("kv-heads", "KV heads (GQA when fewer than query heads)", cxxopts::value<int>())
      ("head-dim", "head dimension: 64, 128 or 256", cxxopts::value<int>())
      ("dtype", "K/V and query type: bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))
      ("page-size", "tokens per KV page", cxxopts::value<int>()->default_value("16"))
      ("pages-per-rank", "KV pool pages on each rank (0: sized from the workload, at most what the GPUs hold)", cxxopts::value<int>()->default_value("0"))
      ("reduction", "state reduction: a2a (all-to-all + n-ary merge) or tree (max, rescale, reduce-scatter)",
       cxxopts::value<std::string>()->default_value("a2a"))
      ("chunks", "pipeline chunks per step: the requests are cut into N chunks whose state exchange overlaps "
                 "the next chunk's compute (one extra backend and stream per chunk)",
       cxxopts::value<int>()->default_value("1"))
      ("split", "own rows last: each rank computes its own requests on a second stream while the queries and "
                "the other rows' states travel (helps with many layers and short shards; bench/scaling/README.md)")
      ("no-send-before-decode", "run each rank's cascade whole before its states are sent (by default the states "
                                "of rows owned elsewhere are sent first and the own rows' suffix decode overlaps "
                                "the exchange)")
      ("head-chunks", "per layer, cut the KV heads into N chunks whose query/state exchanges overlap the other "
                      "chunks' compute (a2a only; divides the KV heads)",
       cxxopts::value<int>()->default_value("1"))
      ("sync-steps", "wait for every step on the GPU before preparing the next (by default the host prepares step "
                     "t+1 - plan broadcast, token append, uploads - while the GPU runs step t, and a step's latency is "
                     "the interval between steps)")
      ("backend", "auto (CUDA when every rank has a GPU, else CPU), cuda or cpu",
       cxxopts::value<std::string>()->default_value("auto"))
      ("shard-min-tokens", "documents shorter than twice this stay whole on one rank", cxxopts::value<int32_t>())
      ("check", "sampled requests checked against a single-rank computation (0: none)",
       cxxopts::value<int>()->default_value("4"))
      ("check-tol", "relative error the check allows (0: 1e-3 on CPU, 1e-2 bf16 / 2e-3 fp16 on GPU)",
       cxxopts::value<double>()->default_value("0"))
      ("progress", "print a progress line every N steps (0: none)", cxxopts::value<int>()->default_value("1"))
      ("seed", "seed of the decoded tokens", cxxopts::value<uint64_t>()->default_value("1"))
      ("h,help", "print this help");
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    PREFIXD_THROW(ErrorKind::kInvalidArgument, "prefixd: " << e.what() << " (see --help)");
  }
  const int rank = session.rank(), ranks = session.size();
  if (args.count("help")) {
    if (rank == 0) std::printf("%s\n", options.help().c_str());
    return 0;
  }

  // Backend: the same choice on every rank.
  const std::string backend_flag = args["backend"].as<std::string>();
  const coordinator::RankDevice rank_device = coordinator::ChooseRankDevice(session, backend_flag);
  const bool use_cuda = rank_device.cuda;
  const Defaults& def = use_cuda ? kGpuDefaults : kCpuDefaults;

  const int page_size = args["page-size"].as<int>();
  // Checked here, before anything divides by it (the pool checks it again).
  PREFIXD_CHECK_ARG(page_size > 0 && page_size <= 4096, "--page-size must be in [1, 4096], got " << page_size);
  const int32_t shard_min = Opt<int32_t>(args, "shard-min-tokens", def.shard_min_tokens);
  // Checked here: the placement would refuse every question one by one, and a negative count of
  // checks would silently check none.
  PREFIXD_CHECK_ARG(shard_min >= 1, "--shard-min-tokens must be ≥ 1, got " << shard_min);
  PREFIXD_CHECK_ARG(args["check"].as<int>() >= 0, "--check must be ≥ 0, got " << args["check"].as<int>());
  // The workload: rank 0 reads it (a malformed line stops the job with its line number).
  Workload workload;
  if (rank == 0) {
    if (args.count("workload")) {
      workload = coordinator::LoadWorkloadFile(args["workload"].as<std::string>(), kVocab);
    } else {
      workload = coordinator::DefaultWorkload(Opt<int64_t>(args, "doc-tokens", def.doc_tokens),
                                              Opt<int>(args, "questions", def.questions),
                                              Opt<int>(args, "question-tokens", def.question_tokens),
                                              Opt<int>(args, "decode-steps", def.decode_steps),
                                              Opt<int>(args, "arrival-spread", def.arrival_spread), kVocab);
    }
  }
  coordinator::EngineOptions eo;
  eo.worker.pool.num_layers = Opt<int>(args, "layers", def.layers);
  eo.worker.pool.num_kv_heads = Opt<int>(args, "kv-heads", def.kv_heads);
  eo.worker.pool.head_dim = Opt<int>(args, "head-dim", def.head_dim);
  eo.worker.pool.dtype = kernels::ParseDType(args["dtype"].as<std::string>());
  eo.worker.pool.page_size = page_size;

  // The KV pool: --pages-per-rank, or sized from the workload; never more than the fullest rank
  // holds, its GPU or, on the CPU backend, its share of the host's memory (an explicit size that
  // does not fit stops here, with the figures, rather than in a failed allocation; a workload size
  // that does not fit is capped, and the questions whose documents then find no room are refused
  // one by one, with the pages they need).
  const bool auto_pages = args["pages-per-rank"].as<int>() == 0;
  std::vector<int32_t> pages_wire{args["pages-per-rank"].as<int>()};
  if (rank == 0 && auto_pages) pages_wire[0] = AutoPagesPerRank(workload, ranks, page_size, shard_min);
  comm::BroadcastInts(MPI_COMM_WORLD, pages_wire, 0);
  eo.worker.pool.num_pages = pages_wire[0];
  eo.worker.pool.Validate();  // the shape's own errors first (BytesPerPage multiplies its fields)
  const coordinator::KvPoolRoom room = coordinator::FindKvPoolRoom(MPI_COMM_WORLD, rank_device, eo.worker.pool);
  if (eo.worker.pool.num_pages > room.pages) {
    const std::string shortfall = coordinator::KvPoolShortfall(eo.worker.pool, room);
    if (!auto_pages) PREFIXD_THROW(ErrorKind::kOutOfMemory, "--pages-per-rank asks for " << shortfall);
    if (room.pages < 1) PREFIXD_THROW(ErrorKind::kOutOfMemory, "the workload asks for " << shortfall);
    if (rank == 0)
      std::printf("# KV pool capped: sized from the workload (with headroom) it would take %s; questions whose "
                  "document then finds no room are refused (more ranks, fewer layers or shorter documents fit)\n",
                  shortfall.c_str());
    eo.worker.pool.num_pages = int(room.pages);
  }
  eo.worker.num_qo_heads = Opt<int>(args, "qo-heads", def.qo_heads);
  eo.worker.reduction = worker::ParseStateReduction(args["reduction"].as<std::string>());
  eo.worker.keep_layer_outputs = true;
  eo.worker.head_chunks = args["head-chunks"].as<int>();
  eo.worker.split_own_rows = args.count("split") > 0;
  eo.worker.send_before_decode = args.count("no-send-before-decode") == 0;
  eo.worker.run_ahead = args.count("sync-steps") == 0;
  eo.placement.shard_min_tokens = shard_min;
  eo.seed = args["seed"].as<uint64_t>();
  eo.vocab = kVocab;

  const int chunks = args["chunks"].as<int>();
  std::unique_ptr<Engine> engine_ptr = coordinator::MakeEngine(eo, rank_device, MPI_COMM_WORLD, chunks);
  Engine& engine = *engine_ptr;
  const std::string backend_desc = engine.worker().backend().Describe();
  const std::string comm_name = engine.worker().comm().name();
  const kernels::KvPoolShape& pool = eo.worker.pool;
  const double page_bytes = double(pool.BytesPerPage());

  if (rank == 0) {
    const char* why_cpu = backend_flag == "cpu" ? " (--backend cpu: SMALL default sizes)"
                                                : " (no GPU on some rank: CPU backend, SMALL default sizes: seconds, not minutes)";
    std::printf("# prefixd: %d rank(s), backend %s%s, comm %s, reduction %s, %d pipeline chunk(s)\n", ranks,
                backend_desc.c_str(), use_cuda ? "" : why_cpu, comm_name.c_str(),
                worker::StateReductionName(eo.worker.reduction), chunks);
    std::printf("# model: %d layers, %d/%d heads, head_dim %d, %s, page %d; KV pool %d pages/rank (%s/rank)\n",
                pool.num_layers, eo.worker.num_qo_heads, pool.num_kv_heads, pool.head_dim,
                kernels::DTypeName(pool.dtype), pool.page_size, pool.num_pages,
                coordinator::FormatBytes(page_bytes * pool.num_pages).c_str());
    std::printf("# workload: %s (%zu documents, %zu questions, %lld tokens to decode)\n", workload.description.c_str(),
                workload.documents.size(), workload.questions.size(), (long long)workload.total_decode_tokens());
    std::fflush(stdout);
  }

  // Rank 0's admission state: questions in arrival order, documents registered on first use and
  // released once their last question is admitted (then freed when that question leaves).
  std::deque<int> waiting;
  std::vector<int> order(workload.questions.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return workload.questions[a].arrival_step < workload.questions[b].arrival_step;
  });
  size_t next_arrival = 0;
  std::vector<int32_t> doc_prefix(workload.documents.size(), -1);
  std::vector<int> doc_questions_left(workload.documents.size(), 0);
  for (const auto& q : workload.questions) ++doc_questions_left[q.document];
  std::map<int32_t, int> request_question;  // request id → question index
  std::vector<int> sampled;                  // question indices to check
  const int num_checks = std::min<int>(args["check"].as<int>(), int(workload.questions.size()));
  for (int i = 0; i < num_checks; ++i)
    sampled.push_back(num_checks == 1 ? 0 : int(int64_t(i) * (int64_t(workload.questions.size()) - 1) / (num_checks - 1)));
  int refused = 0;
  std::string first_refusal;  // the job fails when it refuses every question (below)
  ErrorKind first_refusal_kind = ErrorKind::kInvalidArgument;

  auto admit = [&](int64_t step) {
    coordinator::Coordinator& c = engine.coordinator();
    while (next_arrival < order.size() && workload.questions[order[next_arrival]].arrival_step <= step)
      waiting.push_back(order[next_arrival++]);
    while (!waiting.empty()) {
      const int qi = waiting.front();
      const coordinator::WorkloadQuestion& q = workload.questions[qi];
      try {
        if (doc_prefix[q.document] < 0) doc_prefix[q.document] = c.AddPrefix(workload.documents[q.document].tokens);
        const int32_t id = c.AddRequest(coordinator::RequestSpec{doc_prefix[q.document], q.tokens, q.decode_steps, -1});
        request_question[id] = qi;
      } catch (const Error& e) {
        // Out of KV pages while others still decode: wait for them to leave. Anything else (or
        // nothing left to wait for) refuses the question; the job carries on without it.
        if (e.kind() == ErrorKind::kOutOfMemory && c.num_active() > 0) return;
        std::printf("# refused %s: %s\n", QuestionName(q, qi).c_str(), e.what());
        if (refused++ == 0) {
          first_refusal = QuestionName(q, qi) + ": " + e.what();
          first_refusal_kind = e.kind();
        }
      }
      waiting.pop_front();
      if (--doc_questions_left[q.document] == 0 && doc_prefix[q.document] >= 0) {
        c.ReleasePrefix(doc_prefix[q.document]);
        doc_prefix[q.document] = -1;
      }
    }
  };

  const int progress = args["progress"].as<int>();
  double check_tol = args["check-tol"].as<double>();
  if (check_tol <= 0) check_tol = !use_cuda ? 1e-3 : pool.dtype == kernels::DType::kFloat16 ? 2e-3 : 1e-2;
  std::vector<double> step_ms;
  int64_t decoded = 0;
  double busy_s = 0, worst_err = 0;
  int checks_done = 0, checks_failed = 0;
  std::vector<worker::WorkerMemory> peak;
  if (rank == 0 && progress > 0) std::printf("%8s %8s %8s %10s\n", "step", "active", "decoded", "time_ms");

  for (int64_t step = 0;; ++step) {
    std::vector<int32_t> go{0};
    if (rank == 0) {
      // Nothing to run until the next question arrives: its arrival step comes next, so a late
      // arrival (up to 2^40) costs no run of empty steps.
      const auto& c = engine.coordinator();
      if (waiting.empty() && c.num_active() == 0 && !c.HasPendingEvents() && next_arrival < order.size())
        step = std::max(step, workload.questions[order[next_arrival]].arrival_step);
      admit(step);
      go[0] = (!waiting.empty() || next_arrival < order.size() || c.num_active() > 0 || c.HasPendingEvents()) ? 1 : 0;
    }
    comm::BroadcastInts(MPI_COMM_WORLD, go, 0);
    if (!go[0]) break;
    PREFIXD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    const worker::StepPlan& plan = engine.Step();
    PREFIXD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double dt = MPI_Wtime() - t0;
    const int n = int(plan.decode.size());
    if (n > 0) {
      step_ms.push_back(dt * 1e3);
      decoded += n;
      busy_s += dt;
    }
    const std::vector<worker::WorkerMemory> mem = engine.GatherMemory();
    if (rank == 0) {
      if (peak.empty()) peak = mem;
      for (size_t r = 0; r < mem.size(); ++r)
        if (mem[r].pages_prefix + mem[r].pages_suffix > peak[r].pages_prefix + peak[r].pages_suffix) peak[r] = mem[r];
      if (progress > 0 && (step % progress == 0))
        std::printf("%8lld %8d %8lld %10.3f\n", (long long)step, n, (long long)decoded, dt * 1e3);
      std::fflush(stdout);
    }

    // Check the sampled questions that decoded their last token in this step.
    std::vector<int32_t> check_ids;
    if (rank == 0) {
      const auto& c = engine.coordinator();
      for (const auto& e : plan.decode) {
        const int qi = request_question.at(e.request_id);
        if (std::find(sampled.begin(), sampled.end(), qi) == sampled.end()) continue;
        if (c.requests().count(e.request_id)) continue;  // not finished yet
        check_ids.push_back(e.request_id);
      }
    }
    comm::BroadcastInts(MPI_COMM_WORLD, check_ids, 0);
    if (check_ids.empty()) continue;
    const int hq = eo.worker.num_qo_heads, d = pool.head_dim;
    const int check_layers[2] = {0, pool.num_layers - 1};
    for (int li = 0; li < (pool.num_layers > 1 ? 2 : 1); ++li) {
      const int layer = check_layers[li];
      std::vector<float> v, s;
      engine.GatherOutputs(check_ids, layer, &v, &s);
      if (rank != 0) continue;
      for (size_t i = 0; i < check_ids.size(); ++i) {
        std::vector<int32_t> prefix, suffix;
        engine.coordinator().RequestTokens(check_ids[i], &prefix, &suffix);
        std::vector<float> rv, rs;
        worker::ReferenceDecode(engine.worker().backend(),
                                worker::ReferenceShape{hq, pool.num_kv_heads, d, pool.page_size, pool.dtype, 0.f},
                                prefix, suffix, layer, &rv, &rs);
        double num = 0, den = 0, s_err = 0;
        bool finite = true;
        for (size_t k = 0; k < rv.size(); ++k) {
          const float got = v[i * hq * d + k];
          finite &= std::isfinite(got);
          num += (double(got) - rv[k]) * (double(got) - rv[k]);
          den += double(rv[k]) * rv[k];
        }
        for (int h = 0; h < hq; ++h) {
          finite &= std::isfinite(s[i * hq + h]);
          s_err = std::max(s_err, std::abs(double(s[i * hq + h]) - rs[h]) / std::max(1.0, std::abs(double(rs[h]))));
        }
        const double err = std::max(std::sqrt(num / std::max(den, 1e-30)), s_err);
        const bool ok = finite && err <= check_tol;
        worst_err = std::max(worst_err, finite ? err : INFINITY);
        ++checks_done;
        checks_failed += ok ? 0 : 1;
        const int qi = request_question.at(check_ids[i]);
        std::printf("# check: %s (request %d), %zu + %zu tokens, layer %d: rel err %.3g %s\n",
                    QuestionName(workload.questions[qi], qi).c_str(), check_ids[i], prefix.size(),
                    suffix.size(), layer, err, ok ? "ok" : "FAILED");
      }
      std::fflush(stdout);
    }
  }

  // The layout choice's near ties timed on the device (WorkerOptions::measure_plan_choice), over all
  // ranks: each costs a few milliseconds of one step, once per shape class.
  int64_t choices[2] = {engine.worker().plan_choices_timed(), engine.worker().plan_classes_kept()};
  PREFIXD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, choices, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) {
    std::vector<double> sorted = step_ms;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double p) { return sorted.empty() ? 0.0 : sorted[size_t(p * (sorted.size() - 1))]; };
    const double mean = sorted.empty() ? 0 : std::accumulate(sorted.begin(), sorted.end(), 0.0) / sorted.size();
    std::printf("# done: %zu decode steps, %lld tokens decoded in %.3f s of steps: %.1f tokens/s; step latency "
                "mean %.3f ms, p50 %.3f ms, p99 %.3f ms, max %.3f ms; %d question(s) refused\n",
                step_ms.size(), (long long)decoded, busy_s, busy_s > 0 ? decoded / busy_s : 0.0, mean, pct(0.5),
                pct(0.99), sorted.empty() ? 0.0 : sorted.back(), refused);
    std::printf("# plans: %lld near tie(s) of the layout choice timed on the device, %lld shape class(es) kept "
                "(summed over ranks)\n",
                (long long)choices[0], (long long)choices[1]);
    for (size_t r = 0; r < peak.size(); ++r)
      std::printf("# memory rank %zu (peak): KV pool %s, prefix shards %d pages (%s), suffixes %d pages (%s), "
                  "workspace %s\n",
                  r, coordinator::FormatBytes(double(peak[r].pool_bytes)).c_str(), peak[r].pages_prefix,
                  coordinator::FormatBytes(page_bytes * peak[r].pages_prefix).c_str(), peak[r].pages_suffix,
                  coordinator::FormatBytes(page_bytes * peak[r].pages_suffix).c_str(), coordinator::FormatBytes(double(peak[r].workspace_bytes)).c_str());
    if (checks_done > 0)
      std::printf("# check: %d of %d sampled outputs within %.1e of the single-rank unshared computation "
                  "(worst %.3g): %s\n",
                  checks_done - checks_failed, checks_done, check_tol, worst_err, checks_failed ? "FAILED" : "OK");
    std::fflush(stdout);
  }
  // The job's verdict, decided on rank 0: a sampled output that differs fails it (internal error);
  // so does refusing every question (it served nothing: the first refusal's kind, e.g. out of
  // memory, exit 5), while some refusals beside served questions do not. Every rank learns it
  // before any leaves Main, and the others wait in a barrier for rank 0's abort: a rank already in
  // MPI_Finalize can keep mpirun from ending after that abort (seen: the job hung under load).
  std::vector<int32_t> failed{0};
  if (rank == 0) failed[0] = checks_failed > 0 || (refused > 0 && size_t(refused) == workload.questions.size());
  comm::BroadcastInts(MPI_COMM_WORLD, failed, 0);
  if (failed[0] != 0) {
    if (rank == 0 && checks_failed > 0)
      PREFIXD_THROW(ErrorKind::kInternal, checks_failed << " sampled output(s) differ from the single-rank computation");
    if (rank == 0)
      PREFIXD_THROW(first_refusal_kind, "every question (" << refused << ") was refused; the first, " << first_refusal);
    PREFIXD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return prefixd::comm::RunRankMain(argc, argv, [&](prefixd::comm::MpiSession& session) {
    return Main(session, argc, argv);
  });
}
