#!/usr/bin/env python3
"""Per-shape differences between two variants of one prefixd_kernel_bench --variants run.

Prints, per CSV, the sum / median / extremes of (A - B) of the step's total and of its prefix and
suffix parts, then one line per shape. A is the first variant (default when present), B the other
or the one named with --against.

usage: variant_diff.py RESULTS.csv [RESULTS.csv ...] [--against NAME]
"""
import argparse
import csv
import statistics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--against", help="variant B (default: the first one that is not variant A)")
    args = ap.parse_args()
    for path in args.csv:
        rows = list(csv.DictReader(open(path)))
        by = {}
        for r in rows:
            key = (r["dtype"], r["h_qo"] + "/" + r["h_kv"], int(r["head_dim"]), int(r["batch"]), int(r["prefix"]),
                   int(r["suffix"]))
            by.setdefault(key, {})[r["variant"]] = r
        variants = sorted({r["variant"] for r in rows}, key=lambda v: v != "default")
        a = variants[0]
        b = args.against or next(v for v in variants if v != a)
        common = [v for v in by.values() if a in v and b in v]
        if not common:
            print(f"== {path}: no shape has both {a} and {b}")
            continue

        def diffs(field):
            return [float(v[a][field]) - float(v[b][field]) for v in common]

        dt, dp, ds = diffs("total_us"), diffs("prefix_us"), diffs("suffix_us")
        print(f"== {path}: {a} - {b} over {len(common)} shapes: total sum {sum(dt):+.1f} us (median "
              f"{statistics.median(dt):+.2f}, min {min(dt):+.1f}, max {max(dt):+.1f}); prefix part sum {sum(dp):+.1f} "
              f"(min {min(dp):+.1f}, max {max(dp):+.1f}); suffix part sum {sum(ds):+.1f}")
        for key in sorted(by):
            v = by[key]
            if a not in v or b not in v:
                continue
            print(f"   {key[0]} {key[1]} D{key[2]} B{key[3]} P{key[4]} S{key[5]}: total {float(v[a]['total_us']):.1f} vs "
                  f"{float(v[b]['total_us']):.1f}, prefix {float(v[a]['prefix_us']):.1f} vs {float(v[b]['prefix_us']):.1f}")


if __name__ == "__main__":
    main()
