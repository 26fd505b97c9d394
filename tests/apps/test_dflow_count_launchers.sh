#!/usr/bin/env bash
# One 2-worker ring training of the counting app, started by each launcher
# whose variables dflow reads (dist/cluster_environment.h), ends with the
# same parameters bit for bit: `dflow launch` (DFLOW_CLUSTER), a written
# TF_CONFIG (Kubeflow's TFJob), torchrun's variables, a synthetic `srun`
# environment (Slurm), and a real `mpirun -np 2` (Open MPI). Each process
# logs where its cluster came from; partial and conflicting variables are
# refused naming them. Every run is under `timeout`.
# Usage: test_dflow_count_launchers.sh PATH/TO/dflow-count
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-count}
source "$(dirname "$(readlink -f "$0")")/app_checks.sh"
# Below the ephemeral range (32768..), where the links' own sockets could take our ports.
PORT=$((20000 + RANDOM % 10000))

"$EXE" generate --out "$TMP/data" --images 8 --width 72 --height 40 --max-flowers 6 --seed 3 > /dev/null ||
  fail "generate"
train=(train --data "$TMP/data" --tile 32 --batch 2 --threads 1 --checkpoint-every 2 --steps 4 --workers 2)

# same_bits NAME: run NAME ended with the `dflow launch` run's parameters.
same_bits() {
  [[ -s $TMP/$1/checkpoints/model-4.safetensors ]] || { cat "$TMP/$1.txt"; fail "$1: no final checkpoint"; }
  cmp "$TMP/launch/checkpoints/model-4.safetensors" "$TMP/$1/checkpoints/model-4.safetensors" ||
    fail "$1: the parameters differ from the dflow launch run's"
}
# two_ranks NAME VARIABLES_OF_RANK_0 -- VARIABLES_OF_RANK_1: runs both ranks
# of run NAME, each with its own variables (env assignments), and waits.
two_ranks() {
  local name=$1 pids=() rank=0 vars=()
  shift
  for arg in "$@" --; do
    if [[ $arg == -- ]]; then
      env "${vars[@]}" timeout 90 "$EXE" "${train[@]}" --out "$TMP/$name" > "$TMP/$name-$rank.txt" 2>&1 &
      pids+=($!)
      rank=$((rank + 1))
      vars=()
    else
      vars+=("$arg")
    fi
  done
  local pid ok=1
  for pid in "${pids[@]}"; do wait "$pid" || ok=0; done
  cat "$TMP/$name"-*.txt > "$TMP/$name.txt"
  ((ok)) || { cat "$TMP/$name.txt"; fail "$name: a rank failed"; }
}

timeout 90 "$EXE" "${train[@]}" --out "$TMP/launch" --base-port $PORT > "$TMP/launch.txt" 2>&1 ||
  { cat "$TMP/launch.txt"; fail "train --workers 2 under dflow launch"; }
grep -q '^\[worker:1\] dflow: /job:worker/replica:0/task:1 of a cluster of 2 worker (from DFLOW_CLUSTER)' \
  "$TMP/launch.txt" || { cat "$TMP/launch.txt"; fail "no log of the cluster's source"; }

# Kubeflow's TFJob: TF_CONFIG with a chief (dflow's worker 0) and one worker.
cluster="\"cluster\": {\"chief\": [\"127.0.0.1:$((PORT + 10))\"], \"worker\": [\"127.0.0.1:$((PORT + 11))\"]}"
two_ranks tf_config "TF_CONFIG={$cluster, \"task\": {\"type\": \"chief\", \"index\": 0}}" -- \
  "TF_CONFIG={$cluster, \"task\": {\"type\": \"worker\", \"index\": 0}}"
grep -q "dflow: /job:worker/replica:0/task:1 of a cluster of 2 worker (from TF_CONFIG)" "$TMP/tf_config.txt" ||
  { cat "$TMP/tf_config.txt"; fail "TF_CONFIG: TensorFlow's worker 0 is not dflow's worker 1"; }
same_bits tf_config

# torchrun / PyTorchJob.
torch=(WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((PORT + 20)))
two_ranks torchrun RANK=0 LOCAL_RANK=0 "${torch[@]}" -- RANK=1 LOCAL_RANK=1 "${torch[@]}"
grep -q "from RANK/WORLD_SIZE (torchrun), rank 1 of 2; the ranks met at 127.0.0.1:$((PORT + 20))" \
  "$TMP/torchrun.txt" || { cat "$TMP/torchrun.txt"; fail "torchrun: no log of the meeting"; }
same_bits torchrun

# srun's variables on one node: the ranks meet at the node list's first host.
slurm=(SLURM_NTASKS=2 SLURM_STEP_ID=0 SLURM_JOB_ID=$PORT SLURM_STEP_NODELIST=localhost)
two_ranks srun SLURM_PROCID=0 SLURM_LOCALID=0 "${slurm[@]}" -- SLURM_PROCID=1 SLURM_LOCALID=1 "${slurm[@]}"
grep -q "from SLURM_PROCID/SLURM_NTASKS (Slurm), rank 0 of 2; the ranks met at localhost:" "$TMP/srun.txt" ||
  { cat "$TMP/srun.txt"; fail "srun: no log of the meeting"; }
same_bits srun

# A real mpirun (Open MPI; root needs --allow-run-as-root).
command -v mpirun > /dev/null || fail "mpirun is missing (./dev installs openmpi-bin)"
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$EXE" "${train[@]}" --out "$TMP/mpirun" \
  > "$TMP/mpirun.txt" 2>&1 || { cat "$TMP/mpirun.txt"; fail "mpirun -np 2"; }
grep -q "from OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (Open MPI), rank 1 of 2" "$TMP/mpirun.txt" ||
  { cat "$TMP/mpirun.txt"; fail "mpirun: no log of the meeting"; }
same_bits mpirun

# Partial and conflicting variables, named; nothing is written.
RANK=0 expect_error "RANK is set but WORLD_SIZE is not" "$EXE" "${train[@]}" --out "$TMP/bad1"
RANK=3 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
  expect_error "RANK=3 and WORLD_SIZE=2 conflict" "$EXE" "${train[@]}" --out "$TMP/bad2"
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 \
  expect_error "set DFLOW_COORDINATOR=host:port" "$EXE" "${train[@]}" --out "$TMP/bad3"
TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}' \
  expect_error "TF_CONFIG names this task an evaluator" "$EXE" "${train[@]}" --out "$TMP/bad4"
for d in bad1 bad2 bad3 bad4; do [[ -e $TMP/$d ]] && fail "a refused run wrote $TMP/$d"; done
echo "dflow-count under launchers: all checks passed"
