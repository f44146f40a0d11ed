// The kernel benchmark's planner modes (kernel_bench.cc parses the command line):
// --planner-check, the layouts of each shape timed and the cost model's and the measured choice's
// plans judged by them; --calibrate, the model fitted to every part of those layouts; --fit-logs,
// the model judged (and fitted) offline from planner-check logs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kernel/kernel_bench_common.h"
#include "prefixd/kernels/cost_model.h"

namespace prefixd::bench {

// Runs --calibrate and/or --planner-check over cfg.shapes; returns the process exit status.
// `params`: the --cost-model file's (model_given) or the built-in H200 parameters; without a file,
// the backend's own model where its options carry one (its TMA decode's warps, DefaultPlanOptions).
int RunPlannerModes(Backend* backend, bool use_gpu, const Config& cfg, uint64_t seed0, bool check,
                    const std::string& calibrate_path, kernels::CostModelParams params, bool model_given);

// --fit-logs (no GPU): the logs' step times as whole-step samples of their layouts; prints the
// model's error on them per log and its choices judged by them; with `calibrate_path`, fits the
// model to them first and writes it there. Returns the process exit status.
int RunFitLogs(const std::vector<std::string>& logs, const std::string& calibrate_path, kernels::CostModelParams params,
               bool model_given);

}  // namespace prefixd::bench
