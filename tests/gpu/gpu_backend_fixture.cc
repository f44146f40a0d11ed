#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace prefixd::test {

bool CpuStandIn() {
  const char* env = std::getenv("PREFIXD_GPU_TESTS_CPU_STAND_IN");
  return env != nullptr && std::string(env) == "1";
}

kernels::WorkspaceLimits TestLimits() {
  kernels::WorkspaceLimits l;
  l.max_requests = 1024;
  l.max_qo_heads = 64;
  l.max_slots = 1 << 14;
  l.max_plan_ints = 1 << 20;
  l.max_state_floats = int64_t(1) << 24;
  return l;
}

std::unique_ptr<Backend> MakeDeviceBackend(const kernels::WorkspaceLimits& limits) {
  kernels::BackendOptions options;
  options.limits = limits;
  if (kernels::CudaAvailable()) return kernels::MakeCudaBackend(options);
  return kernels::MakeCpuBackend(options);
}

std::unique_ptr<Backend> MakeCudaBackendWithEnv(const EnvSettings& settings) {
  struct Env {
    const EnvSettings& settings;
    explicit Env(const EnvSettings& s) : settings(s) {
      for (const auto& [name, value] : settings) setenv(name.c_str(), value.c_str(), 1);
    }
    ~Env() {
      for (const auto& setting : settings) unsetenv(setting.first.c_str());
    }
  } env(settings);
  kernels::BackendOptions options;
  options.limits = TestLimits();
  return kernels::MakeCudaBackend(options);
}

Backend& Device() {
  static std::unique_ptr<Backend> backend = MakeDeviceBackend();
  return *backend;
}

Backend& Cpu() {
  static std::unique_ptr<Backend> backend = kernels::MakeCpuBackend();
  return *backend;
}

void ExpectMatchesOracle(const StepResult& got, const RefOutput& want, DType dtype, const std::string& what) {
  const int64_t n = int64_t(want.v.size());
  ExpectAllClose(got.v.data(), want.v.data(), n, OutputTolerance(dtype), what + " v_out vs float64");
  ExpectLseClose(got.s.data(), want.s.data(), int64_t(want.s.size()), kLseTol, what + " s_out vs float64");
  ExpectAllClose(got.o.data(), want.v.data(), n, OutputTolerance(dtype), what + " o vs float64");
}

void ExpectMatchesCpu(const StepResult& got, const StepResult& cpu, DType dtype, const std::string& what) {
  const std::vector<double> v = ToDouble(cpu.v), s = ToDouble(cpu.s);
  ExpectAllClose(got.v.data(), v.data(), int64_t(v.size()), OutputTolerance(dtype), what + " v_out vs CPU backend");
  ExpectLseClose(got.s.data(), s.data(), int64_t(s.size()), kLseTol, what + " s_out vs CPU backend");
}

PlanOptions CascadeOptions(const Backend& backend) {
  PlanOptions o = backend.DefaultPlanOptions();
  o.choose_layout = false;
  return o;
}

PlanOptions OptionsFor(Split split, const Backend& backend) {
  PlanOptions o = CascadeOptions(backend);
  if (split != Split::kDevice) o.prefix_target_items = 0;  // the variants below set target_items alone
  switch (split) {
    case Split::kDevice: break;
    case Split::kFinest:
      o.target_items = 1 << 20;
      o.prefix_tile_rows = 3;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      o.decode_chunk_align = o.min_decode_chunk = 1;
      break;
    case Split::kFineChunks:
      o.target_items = 1 << 12;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      o.decode_chunk_align = o.min_decode_chunk = 1;
      break;
    case Split::kNone: o.target_items = 1; break;
    case Split::kFinePrefix:
      o.target_items = 1 << 12;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      break;
  }
  return o;
}

PlanOptions OptionsFor(Split split) { return OptionsFor(split, Device()); }

CascadeInputs MakeCascadeInputs(const CascadeCase& c, std::mt19937_64& rng) {
  const std::vector<GroupSpec> groups = c.groups.empty() ? RandomGroups(rng, 4, 4, 400, 80) : c.groups;
  CascadeInputs in;
  in.shape = KvPoolShape{c.num_layers, PagesNeeded(groups, c.page_size) + 3, c.page_size, c.num_kv_heads,
                         c.head_dim, c.dtype};
  kernels::PageAllocator alloc(in.shape.num_pages);
  in.batch = BuildBatch(groups, c.num_qo_heads, c.page_size, alloc, rng);
  in.pool = RandomKvPool(rng, in.shape);
  in.q = MakeQueries(rng, in.pool, c.layer, in.batch, c.peaky, kPeakyScale);
  return in;
}

UnsplitCascade MakeUnsplitCascade(const CascadeCase& c, std::mt19937_64& rng) {
  UnsplitCascade u;
  u.in = MakeCascadeInputs(c, rng);
  u.want = NaiveCascade(u.in.pool, c.layer, u.in.batch, u.in.q, 1.0 / std::sqrt(double(c.head_dim)));
  u.plan = kernels::PlanCascade(u.in.batch, u.in.shape, OptionsFor(Split::kNone));
  EXPECT_EQ(u.plan.concurrent_decode_sms, 0) << c.name;
  return u;
}

std::vector<CascadeCase> CascadeCases() {
  return {
        // B = 1, suffix of one token.
        CascadeCase{"b1_suffix1_fp16_h32kv32_d128_p16", kF16, 32, 32, 128, 16, {{100, {1}}}},
        // Several groups, one without prefix, empty suffixes, partly filled last pages.
        CascadeCase{"mixed_groups_bf16_h4kv2_d128_p16", kBF16, 4, 2, 128, 16,
                    {{37, {5, 16, 17}}, {0, {3, 20}}, {200, {0, 9}}}},
        // Every dtype × head_dim, every GQA group size, peaky and flat.
        CascadeCase{"peaky_fp16_h8kv2_d256_p16", kF16, 8, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}, true},
        CascadeCase{"flat_bf16_h8kv1_d256_p16", kBF16, 8, 1, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}},
        CascadeCase{"peaky_bf16_h16kv2_d64_p16", kBF16, 16, 2, 64, 16, {{300, {7, 33, 2}}, {64, {1}}}, true},
        CascadeCase{"flat_fp16_h8kv4_d64_p16", kF16, 8, 4, 64, 16, {{129, {18, 40}}, {0, {77}}}},
        CascadeCase{"peaky_fp16_h8kv8_d128_p16", kF16, 8, 8, 128, 16, {{250, {31, 2, 64}}}, true},
        CascadeCase{"flat_bf16_h8kv8_d128_p16", kBF16, 8, 8, 128, 16, {{250, {31, 2, 64}}}},
        CascadeCase{"peaky_bf16_h8kv4_d256_p16", kBF16, 8, 4, 256, 16, {{90, {5}}, {200, {19, 1}}}, true},
        CascadeCase{"peaky_fp16_h8kv1_d64_p16", kF16, 8, 1, 64, 16, {{77, {3, 45}}}, true},
        // Page size not a power of two; prefix not a multiple of it.
        CascadeCase{"odd_page5_bf16_h8kv1_d64", kBF16, 8, 1, 64, 5, {{23, {4, 11, 0, 6}}, {0, {13}}}},
        // Prefix split into more chunks than pages; suffixes into 1-token chunks.
        CascadeCase{"finest_page5_peaky_fp16_h8kv1_d128", kF16, 8, 1, 128, 5, {{23, {4, 11}}, {41, {9}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"more_chunks_than_pages_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{40, {3, 2}}}, false,
                    Split::kFinest, 1, 0, true},
        CascadeCase{"fine_chunks_bf16_h32kv8_d128_p16", kBF16, 32, 8, 128, 16, {{70, {3, 30}}, {33, {18}}}, true,
                    Split::kFineChunks, 1, 0, true, true},
        CascadeCase{"no_split_fp16_h4kv2_d128", kF16, 4, 2, 128, 16, {{300, {5, 40}}, {0, {3}}}, false, Split::kNone},
        // Long suffixes: split-KV with the device's own options.
        CascadeCase{"split_kv_long_suffix_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16, {{0, {1500, 3}}}, true,
                    Split::kDevice, 1, 0, false, true},
        // Realistic sizes: GQA 4, a long prefix chunked over the device.
        CascadeCase{"long_prefix_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16,
                    {{2000, {17, 300, 64, 1}}, {1500, {250}}}, false},
        CascadeCase{"long_prefix_peaky_bf16_h32kv32_d128_p16", kBF16, 32, 32, 128, 16, {{1100, {40, 7}}}, true},
        // A layer other than 0.
        CascadeCase{"layer1_of_2_peaky_bf16_h8kv2_d64", kBF16, 8, 2, 64, 16,
                    {{48, {1}}, {0, {2, 0}}, {130, {17, 16, 15}}, {16, {64}}}, true, Split::kDevice, 2, 1},
        CascadeCase{"empty_requests_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{0, {0, 5}}, {30, {0}}, {0, {0}}}},
        CascadeCase{"random_groups_fp16_h4kv1_d128", kF16, 4, 1, 128, 16, {}, false},
        CascadeCase{"random_groups_finest_bf16_h8kv4_d64_p7", kBF16, 8, 4, 64, 7, {}, true, Split::kFinest},
        // GQA groups the decode kernels are not compiled for (DecodeSlicingFor): 3 on the group of
        // 4, 5-7 on the group of 8 (tensor cores at head_dim ≤ 128, CUDA cores at 256); at head_dim
        // ≤ 128 9-15 on the tensor-core kernel's group of 16 and larger groups in slices of 16 (24:
        // 16 + 8), at 256 groups of more than 8 heads in slices of 8 (the last slice partial at 9),
        // MQA among them.
        CascadeCase{"gqa3_peaky_fp16_h24kv8_d128_p16", kF16, 24, 8, 128, 16, {{300, {5, 40, 1}}, {0, {17}}}, true},
        CascadeCase{"gqa3_bf16_h6kv2_d256_p16", kBF16, 6, 2, 256, 16, {{150, {70, 3}}, {64, {1, 33}}}},
        CascadeCase{"gqa5_bf16_h40kv8_d128_p16", kBF16, 40, 8, 128, 16, {{500, {200, 3, 64}}, {64, {33}}}},
        CascadeCase{"gqa6_peaky_fp16_h12kv2_d64_p16", kF16, 12, 2, 64, 16, {{250, {31, 2, 64}}}, true},
        CascadeCase{"gqa7_fp16_h28kv4_d128_p16", kF16, 28, 4, 128, 16, {{700, {16, 100}}, {0, {45, 2}}}},
        CascadeCase{"gqa7_peaky_bf16_h28kv4_d256_p16", kBF16, 28, 4, 256, 16, {{90, {5, 40}}, {200, {19, 1}}}, true},
        CascadeCase{"gqa9_fp16_h18kv2_d256_p16", kF16, 18, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}},
        CascadeCase{"gqa12_finest_bf16_h24kv2_d128_p16", kBF16, 24, 2, 128, 16, {{130, {40, 7}}, {0, {20}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"gqa16_fp16_h32kv2_d64_p16", kF16, 32, 2, 64, 16, {{400, {3, 129}}, {0, {64}}}},
        CascadeCase{"gqa16_peaky_bf16_h32kv2_d128_p16", kBF16, 32, 2, 128, 16, {{700, {300, 1, 45}}, {0, {130, 16}}},
                    true},
        CascadeCase{"gqa10_fp16_h10kv1_d128_p16", kF16, 10, 1, 128, 16, {{260, {77, 5}}, {33, {200}}}},
        CascadeCase{"gqa24_peaky_fp16_h48kv2_d64_p16", kF16, 48, 2, 64, 16, {{300, {150, 2}}, {0, {41}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"mqa32_peaky_bf16_h32kv1_d128_p16", kBF16, 32, 1, 128, 16, {{1100, {40, 7, 300}}}, true},
        CascadeCase{"mqa64_fp16_h64kv1_d64_p16", kF16, 64, 1, 64, 16, {{200, {3, 90}}, {0, {20}}}}};
}

int ConcurrentDecodeSms(int wanted) {
  int sms = 2;
#ifdef PREFIXD_HAVE_CUDA
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 2;
  }
#endif
  return std::max(1, std::min(wanted, sms - 1));
}

std::unique_ptr<Backend> MakeConcurrentBackend(const std::string& value) {
  return MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", value}});
}

Backend& Concurrent() {
  static std::unique_ptr<Backend> backend = MakeConcurrentBackend(std::to_string(ConcurrentDecodeSms(32)));
  return *backend;
}

PlanOptions BalancedGridOptions(int ctas, int target_items, bool stream) {
  PlanOptions o = CascadeOptions(Device());
  o.prefix_target_items = target_items;
  o.prefix_tile_rows = 128;
  o.min_prefix_chunk = 64;
  o.balance_prefix_ctas = ctas;
  o.balance_min_item_rows = 0;  // the two groups' last row tiles have 128 rows, the others' too
  o.balance_min_chunk_tiles = 1;
  o.balance_min_gain = 0;
  if (stream) {
    o.balance_stream = true;
    o.balance_item_overhead_tiles = 0.5;
  }
  return o;
}

std::unique_ptr<Backend> MakeFusedBackendWith(const char* name, const char* value) {
  EnvSettings settings = {{"PREFIXD_FUSED", "1"}};
  if (name != nullptr) settings.emplace_back(name, value);
  return MakeCudaBackendWithEnv(settings);
}

std::unique_ptr<Backend> MakeFusedBackend(const char* l2_ahead) {
  return MakeFusedBackendWith(l2_ahead != nullptr ? "PREFIXD_FUSED_L2_AHEAD" : nullptr, l2_ahead);
}

Backend& Fused() {
  static std::unique_ptr<Backend> backend = MakeFusedBackend();
  return *backend;
}

std::vector<CascadeCase> FusedCascadeCases() {
  std::vector<CascadeCase> cases = CascadeCases();
  const std::vector<CascadeCase> more = {
      CascadeCase{"page8_fp16_h32kv8_d128", kF16, 32, 8, 128, 8, {{700, {5, 130, 1}}, {0, {60}}}, true},
      CascadeCase{"page32_bf16_h16kv2_d64", kBF16, 16, 2, 64, 32, {{1000, {31, 32, 33}}, {64, {1}}}, true},
      CascadeCase{"page64_fp16_h8kv1_d128", kF16, 8, 1, 128, 64, {{640, {200, 0, 3}}}, false},
      CascadeCase{"gqa4_b48_p3000_fp16_d128", kF16, 32, 8, 128, 16,
                  {{3000, std::vector<int>(48, 256)}}, true},
      CascadeCase{"gqa8_b20_p2500_bf16_d64", kBF16, 64, 8, 64, 16, {{2500, {5, 1000, 0, 300, 17, 129, 256, 2, 64, 80}},
                                                                    {129, {0, 3, 800, 1, 1, 1, 1, 1, 1, 1}}}},
      CascadeCase{"long_split_suffix_bf16_h32kv8_d128", kBF16, 32, 8, 128, 16, {{0, {4000, 3}}, {500, {2100}}}, true,
                  Split::kDevice, 1, 0, false, true},
      // A GQA group of 3 with 30 requests: 90 rows per KV head, so a 64-row warpgroup boundary
      // splits request 21 and the fused kernel's per-request arrival counts cannot apply (its
      // finishing items would wait forever for request 29's): the two-kernel cascade runs it.
      CascadeCase{"gqa3_b30_p900_fp16_h24kv8_d128", kF16, 24, 8, 128, 16, {{900, std::vector<int>(30, 40)}}, true},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  return cases;
}

void ExpectRowsClose(const std::vector<float>& got, const std::vector<double>& want, int64_t rows, int dim, double tol,
                     const std::string& what) {
  double worst = 0;
  int64_t worst_row = -1;
  for (int64_t r = 0; r < rows; ++r) {
    double num = 0, den = 0;
    for (int d = 0; d < dim; ++d) {
      const double g = got[r * dim + d], w = want[r * dim + d];
      num += std::isfinite(g) ? (g - w) * (g - w) : 1e30;
      den += w * w;
    }
    const double err = std::sqrt(num) / std::max(std::sqrt(den), 1e-3);
    if (err > worst) worst = err, worst_row = r;
  }
  EXPECT_LE(worst, tol) << what << ": worst row " << worst_row << " (request · heads + head) has rel. error " << worst;
}

}  // namespace prefixd::test
