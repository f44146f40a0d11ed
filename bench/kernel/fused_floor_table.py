#!/usr/bin/env python3
"""Markdown table of prefixd_kernel_bench CSV rows against the performance issue's fused floor.

fused floor = max(FLOPs / GEMM rate, bytes / copy bandwidth), FLOPs = 4*B*H_qo*(P+S)*D,
bytes = 2*(P + B*S)*H_kv*D*2 (each K/V byte read once); bar = max(1.4 * floor, floor + 10 us)
(head_dim 64: 1.7 * floor). The ceilings are the ones the benchmark printed for the same run
("# ceilings measured now: copy BW X TB/s ... GEMM Y TFLOP/s"): pass them, or the .txt log.

With a read_us column (prefixd_kernel_bench --read-floor: one plain read of the shape's K/V bytes,
each once, timed in the same process and method) two more columns: that read's time and whether it
fits under the bar at all; the summary then counts the shapes whose bar not even that read meets.
With read_split_us (the same bytes as two launches, the prefix's then the suffix's, back to back) and
read_pdl_us (the second a programmatic dependent that reads, then waits for the first, as the
cascade's decode does) a column each, and a count of the shapes whose bar is below each.

usage: fused_floor_table.py RESULTS.csv (--log RUN.txt | --bw TBS --gemm TFLOPS) [--variant NAME]
"""
import argparse
import csv
import re
import sys


def ceilings_from_log(path):
    text = open(path).read()
    bw = re.search(r"copy BW ([0-9.]+) TB/s", text)
    gemm = re.search(r"GEMM ([0-9.]+) TFLOP/s", text)
    if not bw or not gemm:
        sys.exit(f"{path}: no 'copy BW ... TB/s' / 'GEMM ... TFLOP/s' line")
    return float(bw.group(1)), float(gemm.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--log")
    ap.add_argument("--bw", type=float, help="copy bandwidth, TB/s")
    ap.add_argument("--gemm", type=float, help="GEMM rate, TFLOP/s")
    ap.add_argument("--variant", default=None, help="only rows of this --variants name")
    a = ap.parse_args()
    bw, gemm = ceilings_from_log(a.log) if a.log else (a.bw, a.gemm)
    if bw is None or gemm is None:
        sys.exit("give --log or both --bw and --gemm")
    print(f"ceilings: copy {bw} TB/s, GEMM {gemm} TFLOP/s\n")
    rows_in = list(csv.DictReader(open(a.csv)))
    with_read = any(r.get("read_us") for r in rows_in)
    two_launch = [c for c in ("read_split_us", "read_pdl_us") if any(r.get(c) for r in rows_in)]
    names = {"read_split_us": "read as 2 launches µs", "read_pdl_us": "read as 2 PDL launches µs"}
    extra = (" plain read µs | read ≤ bar |" if with_read else "") + "".join(f" {names[c]} |" for c in two_launch)
    print("| dtype | heads | D | B | P | S | total µs | fused floor µs | ratio | bar µs | met |" + extra)
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if with_read else "") + "---|" * len(two_launch))
    met = rows = read_over = 0
    two_over = {c: 0 for c in two_launch}
    for r in rows_in:
        if a.variant is not None and r.get("variant", "") != a.variant:
            continue
        b, p, s, d = int(r["batch"]), int(r["prefix"]), int(r["suffix"]), int(r["head_dim"])
        hq, hk = int(r["h_qo"]), int(r["h_kv"])
        flops = 4.0 * b * hq * (p + s) * d
        kv_bytes = 2.0 * (p + b * s) * hk * d * 2
        floor = max(flops / (gemm * 1e12), kv_bytes / (bw * 1e12)) * 1e6
        bar = 1.7 * floor if d == 64 else max(1.4 * floor, floor + 10.0)
        total = float(r["total_us"])
        ok = total <= bar
        met += ok
        rows += 1
        cells = ""
        if with_read:
            read = float(r["read_us"]) if r.get("read_us") else None
            if read is None:
                cells = " - | - |"
            else:
                read_over += read > bar
                cells = f" {read:.1f} | {'yes' if read <= bar else '**no**'} |"
        for c in two_launch:
            if r.get(c):
                two_over[c] += float(r[c]) > bar
                cells += f" {float(r[c]):.1f} |"
            else:
                cells += " - |"
        print(f"| {r['dtype']} | {hq}/{hk} | {d} | {b} | {p} | {s} | {total:.1f} | {floor:.1f} | "
              f"{total / floor:.2f} | {bar:.1f} | {'yes' if ok else 'no'} |" + cells)
    print(f"\n{met} of {rows} shapes within the bar")
    if with_read:
        print(f"{read_over} of {rows} shapes: a plain read of their K/V bytes alone (same method) takes longer than the bar")
    for c in two_launch:
        print(f"{two_over[c]} of {rows} shapes: their bar is below the {names[c][:-3]}")


if __name__ == "__main__":
    main()
