// Decode beside the prefix: whether a rank's own rows' suffix decode fits on the SMs that the
// prefix kernel's grid leaves idle, so that it can run during the prefix instead of beside the
// state exchange (WorkerOptions::decode_beside_prefix).
//
// Why: a rank that sends states runs prefix → merge → state exchange → owners' merge. Beside the
// exchange, the decode streams K/V from HBM and slows the exchange's copies (on 4 H200s at
// P = 262144, B = 128, S = 512: exchange ~20 µs alone, 34-39 µs beside the decode; bench/scaling/
// README.md, session 6). The persistent sm_90a prefix grid has one CTA per item, and the planner
// often makes fewer items than SMs (32 row tiles × 4 KV splits = 128 on 132 SMs): those SMs idle
// for the whole prefix. A decode of one CTA per idle SM, launched before the prefix, costs the
// prefix nothing and, when it is done by the time the prefix is, takes nothing off the exchange.
//
// The estimate is a pure function of the plan (testable without a GPU): the prefix grid's time is
// its longest item's FLOPs at one SM's tensor-core rate; the decode's, its K/V bytes at `sms` SMs'
// streaming rate. Both rates are per SM, measured on an H200 (WorkerOptions' defaults).
#pragma once

#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/plan.h"

#include <string>

namespace prefixd::worker {

// WorkerOptions::decode_beside_prefix.
enum class DecodeBesidePrefix { kOff, kAuto, kAlways };
DecodeBesidePrefix ParseDecodeBesidePrefix(const std::string& name);  // "off", "auto" or "always"
const char* DecodeBesidePrefixName(DecodeBesidePrefix mode);

struct BesideRates {
  double decode_bytes_per_s_per_sm = 0;  // one 8-warp decode CTA streaming suffix K/V on its SM
  double prefix_flops_per_s_per_sm = 0;  // one persistent prefix CTA on its SM
};

struct BesideEstimate {
  int idle_sms = 0;        // SMs the prefix grid leaves idle (one CTA per item): SMs − items, ≥ 0
  double prefix_us = 0;    // the longest prefix item
  double decode_us = 0;    // every decode item on idle_sms SMs (infinite when there are none)
  bool fits() const { return idle_sms > 0 && decode_us <= prefix_us; }
};

BesideEstimate EstimateDecodeBesidePrefix(const kernels::CascadePlan& plan, const kernels::KvPoolShape& pool,
                                          int num_sms, const BesideRates& rates);

}  // namespace prefixd::worker
