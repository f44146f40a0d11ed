#!/usr/bin/env python3
# The fit of the cost model's concurrent TMA step (session 52): concurrent_tma_prefix_scale and
# concurrent_tma_interference_us (kernels/include/prefixd/kernels/cost_model.h), chosen so that
# the model's best k per shape is the measured best, from
#   1. a kernel-benchmark run's forced-k steps: the CSVs of `--variants` with
#      PREFIXD_CONCURRENT_DECODE_SMS=k+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1 (and
#      PREFIXD_CONCURRENT_DECODE_SMS=0 for the step one after the other), e.g. session 52's run 3:
#      bench/kernel/results/s52/run3.tgz (grid.csv, edge.csv), or session 87's run 7,
#      bench/kernel/results/s87/run7.tgz (grid-r1.csv, edge-r1.csv; the TMA decode forced by
#      PREFIXD_CONCURRENT_DECODE_TMA=force, the parts in bench/kernel/results/s87/fit-parts.txt);
#   2. the model's parts at those k without the scale and interference, as the CPU test prints them
#      ("fit," lines):
#        PREFIXD_COST_MODEL_PRINT_FIT=1 build/tests/prefixd_unit_tests \
#          --gtest_filter=CostModel.PlannerChoosesTheTmaModeWhereItMeasuredFaster > /tmp/fit.txt
# For each (scale, interference) on a grid: the model's step = fixed + max(prefix · scale, decode
# end) + merge + interference · (decode MB beside the prefix); its regret (the sum over shapes of
# measured(the model's best k) / measured(best k) − 1) and the step's mean and rms error. Prints
# the best few and the named point (default: the built-in 0.86 / 0.02; 0.925 before session 87).
#   mkdir -p /tmp/r3 && tar -C /tmp/r3 -xzf bench/kernel/results/s52/run3.tgz
#   python3 bench/kernel/tma_mode_fit.py /tmp/fit.txt /tmp/r3/grid.csv /tmp/r3/edge.csv [SCALE INTERFERENCE]
import csv
import math
import re
import sys


def measured_steps(paths):
    steps = {}  # (B, P, S, k) -> total µs of the forced-k step
    for path in paths:
        for row in csv.DictReader(open(path)):
            m = re.search(r'PREFIXD_CONCURRENT_DECODE_SMS=(\d+)\+', row['variant'])
            if m:
                key = (int(row['batch']), int(row['prefix']), int(row['suffix']), int(m.group(1)))
                steps[key] = float(row['total_us'])
    return steps


def model_parts(path):
    parts = {}  # (B, P, S, k) -> (prefix, decode end, merge, decode MB, fixed)
    for line in open(path):
        if line.startswith('  fit,'):
            f = line.strip().split(',')[1:]
            parts[tuple(int(x) for x in f[:4])] = tuple(float(x) for x in f[4:])
    return parts


def predict(part, scale, interference):
    prefix, decode_end, merge, decode_mb, fixed = part
    prefix *= scale
    beside_mb = decode_mb * min(1.0, prefix / max(decode_end, 1e-9))
    return fixed + max(prefix, decode_end) + merge + interference * beside_mb


def judge(parts, steps, scale, interference):
    keys = [k for k in parts if k in steps]
    shapes = sorted({k[:3] for k in keys})
    regret = 0.0
    for shape in shapes:
        ks = [k for k in keys if k[:3] == shape]
        chosen = min(ks, key=lambda k: predict(parts[k], scale, interference))
        regret += steps[chosen] / min(steps[k] for k in ks) - 1
    # The step's error where the decode is more than a few µs (S > 32: the mode's domain).
    errors = [predict(parts[k], scale, interference) / steps[k] - 1 for k in keys if k[2] > 32]
    mean = sum(errors) / len(errors)
    rms = math.sqrt(sum(e * e for e in errors) / len(errors))
    return regret, mean, rms, len(shapes), len(keys)


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: tma_mode_fit.py FIT_TXT RUN_CSV... [SCALE INTERFERENCE] (see the comment at its top)')
    named = (0.86, 0.02)
    args = sys.argv[1:]
    if len(args) >= 4 and not args[-1].endswith('.csv'):
        named = (float(args[-2]), float(args[-1]))
        args = args[:-2]
    parts, steps = model_parts(args[0]), measured_steps(args[1:])
    if not parts or not steps:
        sys.exit('no "fit," lines or no forced-k steps found')
    grid = []
    for i in range(0, 41):  # 0.70-1.10: s87's faster prefix kernel fits below s52's 0.80-1.10
        scale = 0.70 + 0.01 * i
        for j in range(0, 9):
            interference = 0.005 * j
            grid.append((judge(parts, steps, scale, interference), scale, interference))
    grid.sort(key=lambda g: (round(g[0][0], 3), g[0][2]))
    print('scale  interference  regret  mean error  rms error   (shapes, steps)')
    for (regret, mean, rms, n_shapes, n_steps), scale, interference in grid[:8]:
        print(f'{scale:5.3f}  {interference:12.3f}  {regret:6.3f}  {mean:+10.3f}  {rms:9.3f}   ({n_shapes}, {n_steps})')
    for label, point in (('named', named), ('no scale, no interference', (1.0, 0.0))):
        regret, mean, rms, n_shapes, n_steps = judge(parts, steps, *point)
        print(f'{label} {point}: regret {regret:.3f}, mean error {mean:+.3f}, rms {rms:.3f} ({n_shapes} shapes, {n_steps} steps)')


if __name__ == '__main__':
    main()
