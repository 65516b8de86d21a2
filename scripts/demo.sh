#!/usr/bin/env bash
# Installs everything, builds, and runs the default experiment: LoRA tuning
# of a tiny pretrained Llama-style base on a WordNet definition task (TPE +
# ASHA, 2 lora_train workers per trial; local backend, results in ./tune.db),
# then prints the best configuration next to the base model's eval loss.
# The demo data and base model are built once (scripts/make-demo-model.sh)
# and cached in data/ and models/.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
scripts/install-deps.sh
TUNE_BUILD_TARGETS="tune lora_train bpe_train" scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
scripts/make-demo-model.sh
echo "demo: setup took $(( $(date +%s) - start )) s"

# The base model's loss on the trials' eval examples, before any tuning
# (lora_train writes an untrained adapter into a scratch directory).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
base=$(OMP_NUM_THREADS=2 lora_train --base models/tiny --data data/train.jsonl --eval-data data/eval.jsonl \
         --seq-len 128 --eval-max-examples 128 --max-steps 0 --output "$scratch/base" 2>/dev/null \
       | sed -n 's/.*eval_loss=\([^ ]*\).*/\1/p' | tail -1)

# --resume: a second run continues (or just reports) instead of refusing.
tune run experiments/default.json --resume "$@"
tune best --db tune.db --experiment default
echo "demo: base model eval_loss $base; best trial above; $(( $(date +%s) - start )) s in all"
