#!/usr/bin/env bash
# Builds the demo's tiny pretrained base model once, so the demo needs no
# download; later runs are no-ops while the output is complete and its inputs
# (this script, the demo data) are unchanged.
#
#   scripts/make-demo-model.sh [--out DIR] [--data DIR] [--lora-train PATH] [--steps N] [--threads N] [--force]
#
# 1. scripts/make-demo-data.sh: data/corpus.txt, train/eval.jsonl and the
#    byte-level BPE tokenizer.json (bpe_train), cached itself;
# 2. lora_train init: a random Llama-layout base (hidden 128, 2 layers, 4
#    heads, 2 kv heads, vocab = the tokenizer's) from the config below;
# 3. lora_train pretrain: full-parameter training on data/corpus.txt.
# Output (default models/tiny, git-ignored): config.json, model.safetensors,
# tokenizer.json, a Hugging Face model folder that transformers also loads.
# Needs a built lora_train (default build/bin/lora_train; or --lora-train /
# $LORA_TRAIN) and bpe_train next to it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/models/tiny"
data="$root/data"
lora_train="${LORA_TRAIN:-$root/build/bin/lora_train}"
steps=600
threads=$(nproc)
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --lora-train) lora_train="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "make-demo-model.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
if [ ! -x "$lora_train" ]; then
  echo "make-demo-model.sh: lora_train not found at $lora_train (build it: cmake --build build --target lora_train bpe_train, or pass --lora-train)" >&2
  exit 1
fi
bin_dir=$(dirname "$lora_train")

BPE_TRAIN="${BPE_TRAIN:-$bin_dir/bpe_train}" "$root/scripts/make-demo-data.sh" --out "$data"

# Cache key: this script, its options and the data it trains on.
key=$( { cat "$0"; echo "$steps"; cat "$data/.stamp" 2>/dev/null || true; } | sha256sum | cut -c1-16)
if [ "$force" = 0 ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$key" ] \
   && [ -s "$out/model.safetensors" ] && [ -s "$out/config.json" ] && [ -s "$out/tokenizer.json" ]; then
  echo "make-demo-model: $out is up to date"
  exit 0
fi

tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
cat > "$tmp/init_config.json" <<'JSON'
{
  "model_type": "llama",
  "vocab_size": 0,
  "hidden_size": 128,
  "intermediate_size": 352,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "max_position_embeddings": 512,
  "rms_norm_eps": 1e-6,
  "rope_theta": 10000.0,
  "tie_word_embeddings": true
}
JSON
echo "make-demo-model: init + pretrain ($steps steps) into $out"
start=$(date +%s)
"$lora_train" init --config "$tmp/init_config.json" --tokenizer "$data/tokenizer.json" --out "$tmp" --seed 7
rm -f "$tmp/init_config.json"
"$lora_train" pretrain --base "$tmp" --corpus "$data/corpus.txt" --max-steps "$steps" \
  --lr 3e-3 --warmup-steps 30 --batch-size 16 --seq-len 128 --eval-every 200 --log-every 50 \
  --weight-decay 0.01 --seed 7 --threads "$threads" --eval-max-examples 128 --no-auto-resume
echo "$key" > "$tmp/.stamp"
rm -rf "$out"
mv "$tmp" "$out"
echo "make-demo-model: wrote $out in $(( $(date +%s) - start )) s"
