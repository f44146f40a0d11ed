#!/usr/bin/env bash
# Session 71, run 4 (nvidia-h200): what the timed step's three outputs cost. The kernel benchmark's
# step writes o (input dtype), fp32 v and s; FlashInfer's cascade returns o and s, the distributed
# engine's worker asks for v and s. --output-forms times both one-copy forms interleaved with the
# step and checks them bit for bit against it. The grid's P8192 / P32768 rows, fp16 and bf16.
#   CARRY=.carry/s71c bash bench/kernel/sessions/s71-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run4
timeout 400 $B --heads 32/32,32/8 -b 16,64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16 --output-forms \
  --no-baseline --no-graph -c 1 --csv "$OUT/forms.csv" >"$OUT/forms.txt" 2>&1
echo "forms rc=$? $(grep 'wrong results' "$OUT/forms.txt")"
python3 - "$OUT/forms.csv" "$OUT/forms.txt" <<'PY'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
notes = [l for l in open(sys.argv[2]) if "outputs o+s" in l]
print("dtype heads B P S | step (o, v, s) | o+s | v+s  (us)")
for r, l in zip(rows, notes):
    m = re.search(r"outputs o\+s ([0-9.]+) us, v\+s ([0-9.]+)", l)
    print(f"{r['dtype']} {r['h_qo']}/{r['h_kv']} B{r['batch']} P{r['prefix']} S{r['suffix']} | {float(r['total_us']):.1f} | {m.group(1)} | {m.group(2)}")
PY
pack_logs
