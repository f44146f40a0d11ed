#!/usr/bin/env python3
"""Session 38's A/B table for dynamic tiles: per shape, prefix part and total of the kernel
benchmark of the commit before (old1/old2.csv), of this build's default (static walks) and of
PREFIXD_SM90A_DYNAMIC_TILES=1 (new1/new2.csv, variants interleaved per shape), medians of the two
runs each.

    ab_dynamic_tiles.py OUT_DIR
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
        key = (r["h_qo"] + "/" + r["h_kv"], int(r["batch"]), int(r["prefix"]), int(r["suffix"]))
        out[key] = (float(r["prefix_us"]), float(r["total_us"]))
    return out


def main():
    d = sys.argv[1]
    old = [rows(f) for f in sorted(glob.glob(d + "/old[0-9].csv"))]
    static = [rows(f, "default") for f in sorted(glob.glob(d + "/new[0-9].csv"))]
    dyn = [rows(f, "PREFIXD_SM90A_DYNAMIC_TILES=1") for f in sorted(glob.glob(d + "/new[0-9].csv"))]
    print("heads B P S | prefix us: old / static / dynamic | total us: old / static / dynamic | dyn - old")
    tot = [0.0, 0.0]
    for key in sorted(old[0]) if old else []:
        if not all(key in x for x in old + static + dyn):
            continue
        p = [median(x[key][0] for x in s) for s in (old, static, dyn)]
        t = [median(x[key][1] for x in s) for s in (old, static, dyn)]
        tot[0] += t[1] - t[0]
        tot[1] += t[2] - t[0]
        print("%s B%d P%d S%d | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %+.1f" % (key + tuple(p) + tuple(t) + (t[2] - t[0],)))
    print("sum of totals against old: static %+.1f us, dynamic %+.1f us" % tuple(tot))


if __name__ == "__main__":
    main()
