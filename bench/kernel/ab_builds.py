#!/usr/bin/env python3
"""A/B of two builds of prefixd_kernel_bench in one device call: per shape, the prefix part, the
suffix part (each timed alone) and the step's total of the build before (OUT/old1.csv, old2.csv, ...) and of the new build
(OUT/new1.csv, ...), medians over the runs; with VARIANT names, one column per --variants variant
of the new build (variants interleaved per shape), else its rows as they are. The last column and
the sums compare the last new column with the old build.

    ab_builds.py OUT_DIR [VARIANT ...]
"""
import csv
import glob
import sys
from statistics import median


def rows(path, variant=None):
    out = {}
    for r in csv.DictReader(open(path)):
        if variant is not None and r.get("variant", "") != variant:
            continue
        key = (r["dtype"], int(r["head_dim"]), r["h_qo"] + "/" + r["h_kv"], int(r["batch"]), int(r["prefix"]),
               int(r["suffix"]))
        out[key] = (float(r["prefix_us"]), float(r["total_us"]), float(r["suffix_us"]))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d, variants = sys.argv[1], sys.argv[2:]
    old = [rows(f) for f in sorted(glob.glob(d + "/old[0-9].csv"))]
    new_files = sorted(glob.glob(d + "/new[0-9].csv"))
    if not old or not new_files:
        sys.exit("ab_builds.py: %s needs old1.csv ... and new1.csv ... (found %d and %d)" % (d, len(old), len(new_files)))
    columns = [("old", old)] + ([(v, [rows(f, v) for f in new_files]) for v in variants] or
                                [("new", [rows(f) for f in new_files])])
    names = " / ".join(name for name, _ in columns)
    print("dtype D heads B P S | prefix us: %s | suffix us: %s | total us: %s | %s - old" %
          (names, names, names, columns[-1][0]))
    sums = [0.0] * (len(columns) - 1)
    runs = [r for _, col in columns for r in col]
    for key in sorted(old[0]):
        if not all(key in r for r in runs):
            continue
        pre = [median(r[key][0] for r in col) for _, col in columns]
        tot = [median(r[key][1] for r in col) for _, col in columns]
        suf = [median(r[key][2] for r in col) for _, col in columns]
        for i in range(1, len(columns)):
            sums[i - 1] += tot[i] - tot[0]
        print("%s D%d %s B%d P%d S%d | %s | %s | %s | %+.1f" %
              (key + tuple(" / ".join("%.1f" % x for x in v) for v in (pre, suf, tot)) + (tot[-1] - tot[0],)))
    print("sum of totals against old: " + ", ".join("%s %+.1f us" % (columns[i + 1][0], s) for i, s in enumerate(sums)))


if __name__ == "__main__":
    main()
