#!/usr/bin/env bash
# Session 88, run 7: the deeper K/V ring (3 stages at head_dim 128) on the speculative softmax's
# short items. Run 4 (an H100): at 32/8 B64 P8192 (items of 1024 tokens) the prefix part with
# PREFIXD_SM90A_STAGES=3 27.5-27.6 us against the default 2-stage ring's 27.9-28.2, s84's exact
# softmax 27.2-27.7 either way; even at the other shapes (items of 2048-8192 tokens). Here the two
# rings as variants (interleaved per shape), twice, over wide-CTA plans of items of 128-4096 tokens
# (the 128-token tile: every item under kLongTileItemTokens), fp16, S256; the prefix part timed alone.
# Carry .carry/s88d (this tree's binaries, 538407e).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s88-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run7
for r in 1 2; do
  run_variants ring$r "default,PREFIXD_SM90A_STAGES=3" --heads 32/32,32/8 -b 64,128,256 -p 1024,4096,8192 -s 256 \
    --dtype fp16
done
echo "== prefix part alone (us): shape plan | default r1 r2 | stages=3 r1 r2"
python3 - "$OUT" <<'PY'
import csv, sys, collections, re
out = sys.argv[1]; t = collections.defaultdict(dict); plans = {}
for r in (1, 2):
    for row in csv.DictReader(open(f"{out}/ring{r}.csv")):
        key = f"{row['h_qo']}/{row['h_kv']} B{row['batch']} P{row['prefix']}"
        t[key][(row["variant"], r)] = float(row["prefix_us"])
    for line in open(f"{out}/ring{r}.txt"):
        m = re.search(r"^ +fp16 +\d+ +(\d+)/(\d+) +\d+ +(\d+) +(\d+) .*prefix-plan\(tile (\d+), items of (\d+) tokens, rows <= (\d+)", line)
        if m: plans[f"{m[1]}/{m[2]} B{m[3]} P{m[4]}"] = f"tile {m[5]} items {m[6]} rows {m[7]}"
for k, v in t.items():
    d = [v.get(("default", r), float("nan")) for r in (1, 2)]; s = [v.get(("PREFIXD_SM90A_STAGES=3", r), float("nan")) for r in (1, 2)]
    print(f"{k:20s} {plans.get(k, ''):32s} | {d[0]:7.1f} {d[1]:7.1f} | {s[0]:7.1f} {s[1]:7.1f} | {100 * (sum(s) / sum(d) - 1):+5.1f}%")
PY
pack_logs
