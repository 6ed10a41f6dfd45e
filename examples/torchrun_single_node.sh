#!/usr/bin/env bash
# Multi-process training on one machine: one rank per GPU (or per CPU group).
# Gradients are averaged every update (DD-PPO); slow ranks are preempted
# (habitat_baselines.distrib_preemption.policy: ver's estimate for `ver`,
# sync_frac for `ddppo`).  Ctrl-C stops; SIGTERM stops every rank after the
# current update and writes the resume state; the same command resumes.
#
#   NUM_RANKS=2 CONFIG=doom/ver_my_way_home bash examples/torchrun_single_node.sh [OVERRIDES...]
set -euo pipefail
NUM_RANKS=${NUM_RANKS:-2}
CONFIG=${CONFIG:-doom/ver_my_way_home}
# CPU-only machines: gloo; GPU machines keep the config's NCCL.
BACKEND=()
if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    BACKEND=(habitat_baselines.rl.ddppo.distrib_backend=GLOO)
fi
# habitat-baselines' process-group store listens on MAIN_ADDR:MAIN_PORT.
export MAIN_ADDR=${MAIN_ADDR:-127.0.0.1} MAIN_PORT=${MAIN_PORT:-8738}
exec torchrun --standalone --nproc_per_node="$NUM_RANKS" -m habitat_ver.run \
    --config-name="$CONFIG" "${BACKEND[@]}" "$@"
