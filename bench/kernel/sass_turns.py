#!/usr/bin/env python3
"""The sm_90a prefix kernel's consumer loop in an `nvdisasm -c` (or `cuobjdump -sass`) listing:
the length of each warpgroup turn and where the wait for P·V sits against the softmax.

    sass_turns.py LISTING

A turn is what a consumer warpgroup issues between its TurnBegin (`BAR.SYNC ... 0x100`, the named
barrier of 256 threads) and its TurnEnd (`BAR.ARV ... 0x100`): the other warpgroup waits for it,
so its length is on the ping-pong's critical path. Per turn: its SASS lines (static: code of
branches not taken, e.g. ZeroInvalidRows, counts too) and wgmma count. Then, for each
`WARPGROUP.DEPBAR.LE gsb0, 0x0` (wait for every wgmma group), the MUFU.EX2 instructions between
the previous `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S done) and it, and those after it before the next
turn: in FlashAttention-3's schedule the softmax's exponentials belong between the two waits.
Session 39 found ptxas placing the 0x0 wait before all of them (bench/NOTES-prefix.md).
Static listing only, for comparing builds of one kernel without a GPU.
"""
import sys

from sass_listing import instructions


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    code = [(op, args) for _, op, args in instructions(sys.argv[1])]
    begin = None
    print("turns (SASS lines, wgmma):")
    for i, (op, args) in enumerate(code):
        if op.startswith("BAR.SYNC") and args.endswith("0x100"):
            begin = i
        elif op.startswith("BAR.ARV") and args.endswith("0x100") and begin is not None:
            wgmma = sum(1 for o, _ in code[begin:i] if o.startswith("HGMMA"))
            if wgmma:
                print("  at line %d: %d lines, %d wgmma" % (begin, i - begin, wgmma))
            begin = None
    print("waits for every wgmma group (exponentials since 'S done' / after, until the next turn):")
    last_s_done = None
    for i, (op, args) in enumerate(code):
        if op == "WARPGROUP.DEPBAR.LE" and args.endswith("0x1"):
            last_s_done = i
        elif op == "WARPGROUP.DEPBAR.LE" and args.endswith("0x0") and last_s_done is not None:
            before = sum(1 for o, _ in code[last_s_done:i] if o == "MUFU.EX2")
            after = 0
            for o, a in code[i + 1:]:
                if o.startswith("BAR.SYNC") and a.endswith("0x100"):
                    break
                after += o == "MUFU.EX2"
            print("  at line %d: %d before, %d after" % (i, before, after))
            last_s_done = None


if __name__ == "__main__":
    main()
