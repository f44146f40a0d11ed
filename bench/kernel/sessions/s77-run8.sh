#!/usr/bin/env bash
# Session 77, run 8 (nvidia-h200), a diagnostic for the next lever: where the GQA-4 short-item
# decode's 1503 warp instructions per 16-token tile (run 2) come from, by source line.
#   1. Nsight Compute's SASS page (instructions executed and stall samples per SASS line) of one
#      launch of the tensor-core decode at 32/8 B256 P1024 fp16, S32 (the 2-stage shallow CTA) and
#      S8 (the single-step CTA the length rule takes since run 5);
#   2. nvdisasm -g of those two kernels from dec128.cubin.xz (kernels/cuda/inst/decode_attention_fp16_d128.cu
#      compiled here for sm_90 with the build's flags and -lineinfo: the carried binaries' SASS), so
#      that bench/kernel/sass_lines.py can join the counts to source lines on the project machine.
#   CARRY=.carry/s77d bash bench/kernel/sessions/s77-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run8
NVDISASM=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm 2>/dev/null | head -1)
echo "nvdisasm: ${NVDISASM:-none}"
xz -dc "$CARRY/dec128.cubin.xz" >/tmp/dec128.cubin
K=_ZN7prefixd7kernels4cuda6decode24DecodeAttentionMmaKernelI6__halfLi128ELi4ELi2ELi
for st in 2 1; do
  [ -n "$NVDISASM" ] && "$NVDISASM" -g -c -fun "${K}${st}EEEvNS1_21DecodeAttentionParamsE" /tmp/dec128.cubin \
    >"$OUT/stages$st.sass" 2>&1
  echo "stages$st.sass: $(wc -l <"$OUT/stages$st.sass") lines"
done
for sfx in 32 8; do
  run_ncu_stalls dec$sfx DecodeAttentionMma 1 $B -d 128 --heads 32/8 -b 256 -p 1024 -s $sfx --dtype fp16 --no-baseline \
    --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 | head -12
done
pack_logs
