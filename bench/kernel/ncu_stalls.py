#!/usr/bin/env python3
"""Where a kernel's warps stall, from Nsight Compute's source page of one profiled launch.

Reads `ncu -i REPORT --page source --csv --print-source sass` output (its first row names the
kernel, the second holds the column names) and prints the samples by stall reason, then the SASS
lines with the most samples and their two largest reasons. With --per N: the warp instructions
executed per N (e.g. the kernel's 16-token tiles), grouped by how often each line ran.

  bench/kernel/ncu_stalls.py sass.csv [--top 30] [--per 32768]
"""
import argparse
import csv
from collections import Counter


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--per", type=float, default=0, help="report instructions executed per this many units")
    args = ap.parse_args()
    rows = list(csv.reader(open(args.csv)))
    head = next(r for r in rows if "Source" in r and "Address" in r)
    body = [r for r in rows[rows.index(head) + 1:] if len(r) == len(head)]
    samples = head.index("Warp Stall Sampling (All Samples)")
    source, address = head.index("Source"), head.index("Address")
    reasons = [i for i, h in enumerate(head) if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(float(r[samples] or 0) for r in body) or 1.0
    by_reason = {head[i][6:]: sum(float(r[i] or 0) for r in body) for i in reasons}
    print(f"samples {total:.0f}")
    print("by reason: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in
                                   sorted(by_reason.items(), key=lambda x: -x[1]) if v > 0.005 * total))
    print("top lines:")
    for r in sorted(body, key=lambda r: -float(r[samples] or 0))[:args.top]:
        top2 = sorted(((float(r[i] or 0), head[i][6:]) for i in reasons), reverse=True)[:2]
        print(f"  {100 * float(r[samples] or 0) / total:5.1f}%  {r[address]:>6} {r[source][:60]:60s} {top2[0][1]} {top2[1][1]}")
    if args.per > 0:
        executed = head.index("Instructions Executed")
        inst, samp = Counter(), Counter()
        for r in body:
            n = float(r[executed] or 0)
            if n:
                inst[round(n / args.per, 2)] += n
                samp[round(n / args.per, 2)] += float(r[samples] or 0)
        print(f"warp instructions per unit: {sum(inst.values()) / args.per:.1f}")
        for k, v in sorted(inst.items(), key=lambda x: -x[1])[:8]:
            print(f"  lines run {k:6.3f} times per unit: {v / args.per:7.1f} per unit, {100 * samp[k] / total:5.1f}% of samples")


if __name__ == "__main__":
    main()
