#!/usr/bin/env python3
"""Per shape, the step's total and (the suffix part alone) of each of several prefixd_kernel_bench
CSVs, in the order given (e.g. builds in turn, round 1 then 2: run_build_rounds in device-setup.sh),
µs. Columns are found by their header names, so the CSV's width does not matter.

    rounds_table.py A.csv B.csv ...
"""
import csv
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = []
    for path in sys.argv[1:]:
        try:
            rows = list(csv.DictReader(open(path)))
        except OSError as e:
            sys.exit("rounds_table.py: %s" % e)
        runs.append({(r["dtype"], r["head_dim"], r["h_qo"] + "/" + r["h_kv"], r["batch"], r["prefix"], r["suffix"]):
                     (float(r["total_us"]), float(r["suffix_us"])) for r in rows})
    for key in runs[0]:
        cells = ["%6.1f (%5.1f)" % run[key] if key in run else "     -        " for run in runs]
        print("%s D%s %s B%s P%s S%s | %s" % (key + (" | ".join(cells),)))


if __name__ == "__main__":
    main()
