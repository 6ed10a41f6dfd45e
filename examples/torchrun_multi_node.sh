#!/usr/bin/env bash
# Multi-node training with torchrun: run this same script on every node.
#
#   NNODES=2 NODE_RANK=0 MAIN_ADDR=node0.example bash examples/torchrun_multi_node.sh   # on node 0
#   NNODES=2 NODE_RANK=1 MAIN_ADDR=node0.example bash examples/torchrun_multi_node.sh   # on node 1
#
# MAIN_ADDR is a host every node can reach (node 0). Two ports on it are used:
# torchrun's rendezvous (RDZV_PORT) and habitat-baselines' store (MAIN_PORT).
set -euo pipefail
: "${NNODES:?set NNODES, the number of nodes}"
: "${NODE_RANK:?set NODE_RANK, the index of this node, 0..NNODES-1}"
: "${MAIN_ADDR:?set MAIN_ADDR, the address of node 0}"
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CONFIG=${CONFIG:-rearrange/ver_pick}
export MAIN_ADDR MAIN_PORT=${MAIN_PORT:-8738}
exec torchrun --nnodes="$NNODES" --node_rank="$NODE_RANK" \
    --nproc_per_node="$GPUS_PER_NODE" \
    --master_addr="$MAIN_ADDR" --master_port="${RDZV_PORT:-29500}" \
    -m habitat_ver.run --config-name="$CONFIG" "$@"
