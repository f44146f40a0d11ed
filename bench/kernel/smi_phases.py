#!/usr/bin/env python3
"""Per phase of a device run, the medians of nvidia-smi's samples (power, SM clock, throttle reasons).

Usage: smi_phases.py SMI_CSV MARKS NAME:START:END [NAME:START:END ...]
  SMI_CSV  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_throttle_reasons.active
           --format=csv,noheader -lms 20 (session 57's scripts write it)
  MARKS    lines "MARK YYYY/MM/DD HH:MM:SS.mmm" (the scripts' `mark` helper)
Only the samples drawing > 300 W count (a phase's start holds the host's set-up).
"""
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    marks = dict(line.split(' ', 1) for line in open(argv[2]).read().split('\n') if line)
    rows = [[f.strip() for f in line.split(',')] for line in open(argv[1]) if line.count(',') == 3]
    for phase in argv[3:]:
        name, a, b = phase.rsplit(':', 2)
        lo, hi = marks[a].strip(), marks[b].strip()
        s = [(float(r[1].split()[0]), float(r[2].split()[0]), r[3]) for r in rows
             if lo <= r[0] <= hi and float(r[1].split()[0]) > 300]
        if not s:
            print(name, "no busy samples")
            continue
        w = sorted(x[0] for x in s)
        c = sorted(x[1] for x in s)
        reasons = {}
        for x in s:
            reasons[x[2]] = reasons.get(x[2], 0) + 1
        print(f"{name}: {len(s)} busy samples, power median {w[len(w) // 2]:.0f} W (max {w[-1]:.0f}), "
              f"SM clock median {c[len(c) // 2]:.0f} MHz (p10 {c[len(c) // 10]:.0f}, p90 {c[9 * len(c) // 10]:.0f}), "
              f"throttle reasons {reasons}")
        print("   clock trace (every 5th busy sample, MHz):", " ".join(str(int(x[1])) for x in s[::5]))


if __name__ == "__main__":
    main(sys.argv)
