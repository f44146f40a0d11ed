#!/usr/bin/env python3
"""Registers and spill of each kernel in two `nvcc -Xptxas -v` logs (an older build, this one),
one line per kernel whose counts differ (all with --all); with two `cuobjdump -sass` listings
after them, also each kernel's instructions and local-memory stores / loads (STL / LDL).

    ptxas_regs.py OLD.log NEW.log [OLD.sass NEW.sass] [--all]

bench/kernel/ptxas_diff.sh makes the logs and listings. Static counts: for comparing two builds of
one kernel, not for timing.
"""
import re
import subprocess
import sys
from collections import Counter

from sass_listing import instructions


def ptxas(path):
    out, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            cur = m.group(1)
            out[cur] = {"regs": 0, "spill": 0}
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and cur:
            out[cur]["spill"] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur]["regs"] = int(m.group(1))
    return out


def sass(path):
    counts = {}
    for function, opcode, _ in instructions(path):
        c = counts.setdefault(function, Counter())
        c["n"] += 1
        c[opcode.split(".")[0]] += 1
    return counts


def short(name):
    name = subprocess.run(["c++filt"], input=name, capture_output=True, text=True).stdout.strip()
    return re.sub(r"prefixd::kernels::cuda::(decode::|sm90a::)?", "", name).split("(")[0]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_all = "--all" in sys.argv
    old, new = ptxas(args[0]), ptxas(args[1])
    old_sass, new_sass = (sass(args[2]), sass(args[3])) if len(args) >= 4 else ({}, {})
    for k in sorted(old):
        same_sass = old_sass.get(k) == new_sass.get(k)
        if k not in new or (old[k] == new[k] and same_sass and not show_all):
            continue
        line = f"{short(k):64s} regs {old[k]['regs']:3d} -> {new[k]['regs']:3d}  spill {old[k]['spill']:3d} -> {new[k]['spill']:3d} B"
        if k in old_sass and k in new_sass:
            o, n = old_sass[k], new_sass[k]
            line += f"  instr {o['n']} -> {n['n']}  STL/LDL {o['STL']}/{o['LDL']} -> {n['STL']}/{n['LDL']}"
        print(line)


if __name__ == "__main__":
    main()
