#!/usr/bin/env bash
# Builds the demo data set from Debian text packages (fortunes, wordnet-base),
# once; later runs are no-ops while the inputs and this script are unchanged.
#
#   scripts/make-demo-data.sh [--out DIR] [--bpe-train PATH] [--vocab-size N] [--force]
#
# Writes into DIR (default: data/ at the repository root):
#   corpus.txt      pretraining text: every fortune cookie, plus WordNet
#                   glosses of words outside the fine-tuning task, as
#                   "word: definition" lines; documents separated by blank lines
#   train.jsonl     fine-tuning task: {"instruction": "Define the word: X",
#   eval.jsonl        "response": "<WordNet definition>"} (disjoint words)
#   tokenizer.json  byte-level BPE learned by bpe_train on corpus + train
#                   (vocab 3000, special token <|endoftext|>)
# Needs: fortunes, wordnet-base (scripts/install-deps.sh) and a built bpe_train
# (default: build/bin/bpe_train; or --bpe-train / $BPE_TRAIN).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/data"
bpe_train="${BPE_TRAIN:-$root/build/bin/bpe_train}"
vocab_size=3000
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bpe-train) bpe_train="$2"; shift 2 ;;
    --vocab-size) vocab_size="$2"; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "make-demo-data.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

fortune_dir=/usr/share/games/fortunes
wordnet_dir=/usr/share/wordnet
for need in "$fortune_dir/fortunes" "$wordnet_dir/data.noun"; do
  if [ ! -f "$need" ]; then
    echo "make-demo-data.sh: $need missing: install fortunes and wordnet-base (scripts/install-deps.sh)" >&2
    exit 1
  fi
done

# Cache key: this script, the options and the package versions.
key=$( { cat "$0"; echo "$vocab_size"; dpkg-query -W -f='${Version}\n' fortunes wordnet-base 2>/dev/null || true; } \
       | sha256sum | cut -c1-16)
files=(corpus.txt train.jsonl eval.jsonl tokenizer.json)
if [ "$force" = 0 ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$key" ]; then
  ok=1
  for f in "${files[@]}"; do [ -s "$out/$f" ] || ok=0; done
  if [ "$ok" = 1 ]; then
    echo "make-demo-data: $out is up to date"
    exit 0
  fi
fi
if [ ! -x "$bpe_train" ]; then
  echo "make-demo-data.sh: bpe_train not found at $bpe_train (build it: cmake --build build --target bpe_train, or pass --bpe-train)" >&2
  exit 1
fi

mkdir -p "$out"
tmp=$(mktemp -d "$out/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- WordNet: one (word, definition) per word ------------------------------
# data.* lines: offset lex_filenum ss_type w_cnt word lex_id ... | gloss.
# The definition is the gloss up to its first quoted example. Kept: plain
# lowercase words of 3-12 letters, the first synset that has one, with a
# definition of 15-90 characters. Sorted by word so the result is stable.
LC_ALL=C awk '
  /^  / { next }
  {
    word = $5
    if (word !~ /^[a-z]+$/ || length(word) < 3 || length(word) > 12 || (word in seen)) next
    bar = index($0, " | "); if (bar == 0) next
    def = substr($0, bar + 3)
    q = index(def, "\""); if (q > 0) def = substr(def, 1, q - 1)
    sub(/[ ;]+$/, "", def)
    if (length(def) < 15 || length(def) > 90) next
    seen[word] = 1
    print word "\t" def
  }' "$wordnet_dir/data.noun" "$wordnet_dir/data.verb" "$wordnet_dir/data.adj" \
  | LC_ALL=C sort -t "$(printf '\t')" -k1,1 > "$tmp/glosses.tsv"

# Every 8th word goes to the fine-tuning task (1 in 10 of those to eval);
# the rest to the pretraining corpus.
LC_ALL=C awk -F '\t' -v dir="$tmp" '
  function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return s }
  {
    if (NR % 8 == 0) {
      n++
      line = "{\"instruction\": \"Define the word: " esc($1) "\", \"response\": \"" esc($2) "\"}"
      print line > (dir "/" (n % 10 == 0 ? "eval.jsonl" : "train.jsonl"))
      # The tokenizer also learns from the task text.
      print "### Instruction:\nDefine the word: " $1 "\n\n### Response:\n" $2 "\n" > (dir "/task.txt")
    } else {
      print $1 ": " $2 > (dir "/glosses.txt")
      if (++m % 20 == 0) print "" > (dir "/glosses.txt")
    }
  }' "$tmp/glosses.tsv"

# --- Fortunes: strip the % separators, one document per cookie -------------
: > "$tmp/fortunes.txt"
for f in "$fortune_dir"/*; do
  case "$f" in *.dat|*.u8|*/ascii-art|*/art) continue ;; esac
  [ -f "$f" ] || continue
  # Cookies end with a line holding only "%"; collapse inner blank lines so a
  # blank line always separates documents.
  LC_ALL=C awk '
    /^%[ \t]*$/ { if (body != "") print body "\n"; body = ""; next }
    /^[ \t]*$/ { next }
    { sub(/[ \t\r]+$/, ""); body = (body == "" ? $0 : body "\n" $0) }
    END { if (body != "") print body "\n" }' "$f" >> "$tmp/fortunes.txt"
done

cat "$tmp/fortunes.txt" "$tmp/glosses.txt" > "$tmp/corpus.txt"
cat "$tmp/corpus.txt" "$tmp/task.txt" > "$tmp/bpe_input.txt"
"$bpe_train" --corpus "$tmp/bpe_input.txt" --vocab-size "$vocab_size" --out "$tmp/tokenizer.json" \
  --special "<|endoftext|>"

for f in "${files[@]}"; do mv -f "$tmp/$f" "$out/$f"; done
echo "$key" > "$out/.stamp"
echo "make-demo-data: wrote $out:" \
  "corpus.txt $(wc -c < "$out/corpus.txt") bytes," \
  "train.jsonl $(wc -l < "$out/train.jsonl") and eval.jsonl $(wc -l < "$out/eval.jsonl") examples," \
  "tokenizer.json (vocab $vocab_size)"
