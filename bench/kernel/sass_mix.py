#!/usr/bin/env python3
"""Static SASS instruction mix of kernels in a `cuobjdump -sass` or `nvdisasm -c` listing.

    sass_mix.py LISTING PATTERN...

For each PATTERN (a piece of a mangled kernel name) and each function whose name contains it,
one line: the function's distinguishing name tail, then counts of the opcodes that matter to the
prefix kernel's softmax (MUFU, FP32 and packed-half ALU, conversions, moves, wgmma) and the total.
Static counts (each instruction once, loops not unrolled by trip count): for comparing two builds
of one kernel, not for timing.
"""
import sys
from collections import Counter

from sass_listing import instructions

WATCH = ["MUFU", "FFMA", "FADD", "FMUL", "FMNMX", "F2FP", "HADD2", "HFMA2", "HMUL2", "MOV", "SHFL", "HGMMA", "BAR",
         "SYNCS"]


def functions(path):
    """(name, opcode counts without modifiers) per function, in listing order."""
    counts = {}
    for function, op, _ in instructions(path):
        if function is not None:
            counts.setdefault(function, Counter())[op.split(".", 1)[0]] += 1
    return list(counts.items())


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    funcs = functions(sys.argv[1])
    print("%-36s " % "kernel (name from the pattern on)" + " ".join("%6s" % w for w in WATCH) + " %7s" % "total")
    for pattern in sys.argv[2:]:
        hits = [(n, c) for n, c in funcs if pattern in n]
        if not hits:
            print("%s: no function" % pattern)
        for n, c in hits:
            at = n.index(pattern)
            tail = n[at:at + len(pattern) + 4][-36:]  # the pattern's end and what follows it
            print("%-36s " % tail + " ".join("%6d" % c[w] for w in WATCH) + " %7d" % sum(c.values()))


if __name__ == "__main__":
    main()
