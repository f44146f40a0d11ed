# Sourced by the scaling scripts that run on a lent multi-GPU machine (x4-sample.sh, x8-sample.sh,
# ab-switch.sh) from the repository root: unpacks the carried binaries $CARRY/scal.tar.xz into
# /tmp/s, makes $OUT, lets OpenMPI run as root, keeps NVLink multicast off (KINDS.md), and sets
# M to the mpirun prefix for NP ranks; defines row CSV, which prints a scaling CSV's rows.
CARRY=${CARRY:?set CARRY to the directory holding scal.tar.xz}
mkdir -p /tmp/s "$OUT" && tar -C /tmp/s -xJf "$CARRY/scal.tar.xz"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE=0 -np $NP"
row() { awk -F, 'NR>1 && !/^#/{printf "  %s %s gpus %s P %s L %s step %s ms exposed %s (%s%%) eff %s err %s\n", $1, $11, $2, $3, $6, $13, $15, $16, $17, $36}' "$1"; }
