#!/usr/bin/env bash
# Session 42, run 2 (nvidia-h200): the new LSE worst-case tests (RoundAllPUp: every P but the max's
# just above a rounding midpoint; |Δs| ≤ 8e-4) on HEAD's binaries (kernels unchanged since
# b22fab3), each case's largest LSE error printed from the test's XML, then compute-sanitizer on
# four of them. Binaries ($CARRY/bins.tar.xz): prefixd_gpu_tests of this commit.
#   CARRY=.carry/s42b bash bench/kernel/sessions/s42-round-up.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-round-up
timeout 200 /tmp/b/prefixd_gpu_tests --gtest_filter='*RoundAllPUp*' --gtest_output=xml:"$OUT/round-up.xml" \
  >"$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -20
python3 - "$OUT/round-up.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).iter("testcase"):
    props = dict(case.attrib)  # older GoogleTest: properties as attributes, newer: <property>
    props.update({p.get("name"): p.get("value") for p in case.iter("property")})
    print(f"{case.get('value_param') or case.get('name')}: max |ds| {props.get('max_lse_error', '-')}"
          f" {'FAILED' if case.find('failure') is not None else ''}")
PY
run_sanitizers '*RoundAllPUp_fp16_d64:*wgmma_plain_RoundAllPUp_fp16_d256:*wgmma_RoundAllPUp_bf16_d128'
pack_logs
