#!/usr/bin/env python3
"""Per shape, the step's total and (the suffix part alone) of each of several prefixd_kernel_bench
CSVs, in the order given (e.g. builds in turn, round 1 then 2: run_build_rounds in device-setup.sh),
µs. Columns are found by their header names (ab_builds.rows), so the CSV's width does not matter.

    rounds_table.py A.csv B.csv ...
"""
import sys

from ab_builds import rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        runs = [rows(path) for path in sys.argv[1:]]
    except OSError as e:
        sys.exit("rounds_table.py: %s" % e)
    for key in runs[0]:
        cells = ["%6.1f (%5.1f)" % (run[key][1], run[key][2]) if key in run else "     -        " for run in runs]
        print("%s D%d %s B%d P%d S%d | %s" % (key + (" | ".join(cells),)))


if __name__ == "__main__":
    main()
