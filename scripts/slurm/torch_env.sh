#!/usr/bin/env bash
# One task of srun, as torch.distributed's env:// rendezvous wants it: RANK, WORLD_SIZE and LOCAL_RANK from Slurm's
# SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID, MASTER_ADDR the step's first node (task 0 runs there), MASTER_PORT
# 20000 + the job id modulo 20000 (unless set), then runs the command:
#   srun -N 4 --ntasks-per-node=1 scripts/slurm/torch_env.sh python3 scripts/slurm/ddp_mnist.py --backend gloo
# Each task computes the same values, so no task needs to hear from another before the rendezvous.
set -euo pipefail
[ $# -ge 1 ] || { echo "torch_env.sh: usage: srun ... torch_env.sh COMMAND [ARGS...]" >&2; exit 2; }
for v in SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID; do
  [ -n "${!v:-}" ] || { echo "torch_env.sh: $v is not set: run it with srun" >&2; exit 2; }
done
nodes="${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:?}}"
first="$(scontrol show hostnames "$nodes" | head -n 1)"
[ -n "$first" ] || { echo "torch_env.sh: scontrol could not expand the node list '$nodes'" >&2; exit 2; }
export RANK="$SLURM_PROCID" WORLD_SIZE="$SLURM_NTASKS" LOCAL_RANK="$SLURM_LOCALID" MASTER_ADDR="$first"
export MASTER_PORT="${MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"
exec "$@"
