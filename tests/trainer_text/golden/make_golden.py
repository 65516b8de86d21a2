#!/usr/bin/env python3
"""Makes the tokenizer golden fixtures for tests/trainer_text.

Needs Hugging Face `tokenizers` and, for the bpe_train check, a built
bpe_train. Not needed to run the tests: its output is committed. Run it
through make_golden.sh, which makes a venv with the pinned `tokenizers`:

    tests/trainer_text/golden/make_golden.sh --bpe-train BUILD/bin/bpe_train

Writes, next to this script:
  corpus.txt               training text (Debian fortunes + a few multilingual lines)
  <variant>/tokenizer.json byte-level BPE tokenizers built with `tokenizers`:
      gpt2       ByteLevel pre-tokenizer, NFC, merges as "a b" strings
      gpt2_prefix ByteLevel(add_prefix_space=True), merges as [a, b] pairs
      qwen2      Sequence[Split(Qwen2 regex), ByteLevel(use_regex=False)], NFC,
                 extra added tokens (lstrip, rstrip, single_word, normalized)
      llama3     Sequence[Split(Llama-3 regex), ByteLevel], ignore_merges,
                 TemplateProcessing with <|begin_of_text|>
      splits     Split behaviours (Removed, MergedWithPrevious/Next,
                 Contiguous, invert) and Digits
  SentencePiece-style BPE (Llama-2 / Mistral / TinyLlama): <unk> <s> </s>, the
  256 <0xNN> byte tokens, then pieces learned over Metaspace words with a
  small alphabet (so emoji, CJK and Hangul take the byte fallback):
      llama2     legacy layout: Prepend("▁") + Replace(" ", "▁") normalizer, no
                 pre-tokenizer, byte_fallback, fuse_unk, decoder
                 Sequence[Replace, ByteFallback, Fuse, Strip], <s> $A
      llama2_first  legacy=false layout: Metaspace(prepend_scheme first,
                 split false), no normalizer (an added token ends "first")
      metaspace  Metaspace(always, split true) with the Metaspace decoder, NFKC,
                 a user-added normalized token
      metaspace_never  Metaspace(never, split true), Metaspace decoder
      sp_unk     only the ASCII <0xNN> tokens: other characters become a fused
                 <unk> (with bytes around it)
      gguf       what transformers writes when converting a GGUF byte-level BPE
                 (SmolLM2): byte_fallback and fuse_unk on a ByteLevel BPE,
                 decoder Sequence[ByteFallback, Fuse, Replace, ByteLevel]
  bpe_train/tokenizer.json our bpe_train's output on corpus.txt (loaded by
                 `tokenizers` here: the check that HF reads it)
  ids.json                 for every variant and string: ids without and with
                 special tokens, and `tokenizers`' decode of the ids
  bytes.json               random byte strings (hex) with ill-formed UTF-8, and
                 the ids of their decode("utf-8", errors="replace") (the
                 same maximal-subpart rule as Rust's from_utf8_lossy)
"""
import argparse
import json
import os
import subprocess
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))

QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>"]

STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing   spaces   ",
    "tabs\tand\nnewlines\n\n\nand\r\nCRLF",
    "   \n  \n\t\t \n",
    "x          y",
    "numbers 1234567 and 3.14159, 2026-11-22, 42nd",
    "punctuation!!! ??? ... --- (parens) [brackets] {braces} @#$%^&*",
    "I'M SURE it's what they'd've WANTED, y'all'll see",
    "emoji: \U0001F600\U0001F389\U0001F44D\U0001F3FD family \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "Korean: \uc548\ub155\ud558\uc138\uc694, \uc138\uacc4! \ud55c\uad6d\uc5b4 \ud1a0\ud06c\ub098\uc774\uc800",
    "Mixed \u4e2d\u6587 and English \u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8",
    "Caf\u00e9, na\u00efve, r\u00e9sum\u00e9 \u2014 NFC: e\u0301 vs \u00e9, \u212b",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "special <|endoftext|> inside<|im_start|>text<|im_end|>\n",
    "<|begin_of_text|>llama3 bos in text<|endoftext|><|endoftext|>",
    "mask   [MASK]   lstrip and <eot>   rstrip",
    "say hello world! and helloworld, single_word <sw> vs a<sw>b",
    "def f(x):\n    return x**2  # comment\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "",
    " ",
    "\n",
    "fortune: Q: How many programmers does it take to change a light bulb?",
    "\u2581already\u2581meta\u2581\u2581spaced \u2581",
    "<0x41> is text, not a byte token; <unk> and <s>bos</s> are special",
    "<s>",
    "  two leading spaces and a trailing one ",
    "tail emoji \U0001F600",
]


def random_strings(n, seed=1234):
    """Seeded random mixes of the character classes the split regexes treat
    differently (letters, digits, whitespace kinds, punctuation, marks,
    CJK, Hangul, emoji, contractions, special tokens)."""
    import random
    rng = random.Random(seed)
    pieces = ["a", "Z", "hello", "World", "'s", "'LL", "'d", "'Re", " ", "  ", "   ", "\t", "\n",
              "\r\n", "\n\n", " \n ", "\u00a0", "\u2003", "\u3000", "\u200b", "0", "7", "123",
              "2026", "\u0663", "\u00bd", ".", ",", "!?", "...", "--", "(", ")", "\"", "#", "$",
              "\u00e9", "e\u0301", "\u00c5", "A\u030a", "\ufb01", "\u4e2d", "\u6587\u5b57",
              "\uc548\ub155", "\ud55c", "\u3042", "\u30ab", "\U0001F600", "\U0001F44D\U0001F3FD",
              "\u2764\ufe0f", "<|endoftext|>", "<|im_start|>", "<|begin_of_text|>", "_", "@x", "ab12cd",
              "\u0410\u0431\u0432", "\u03a9\u03b1", "\u05e9\u05dc\u05d5\u05dd", "\u0627\u0644"]
    out = []
    for _ in range(n):
        k = rng.randint(1, 14)
        out.append("".join(rng.choice(pieces) for _ in range(k)))
    return out


def make_corpus(path):
    lines = []
    for name in ["computers", "science", "linux"]:
        src = os.path.join("/usr/share/games/fortunes", name)
        if not os.path.exists(src):
            continue
        with open(src, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip() == "%":
                    lines.append("")
                else:
                    lines.append(line.rstrip("\n"))
    text = "\n".join(lines)[:60000]
    extra = ("\n\n" + STRINGS[9] + "\n" + STRINGS[10] + "\n" + STRINGS[11] + "\n" + STRINGS[12] +
             "\n안녕하세요 세계 한국어 문장입니다. 😀 🎉 日本語 中文\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + extra * 3)


SP = "\u2581"
SP_SPECIALS = ["<unk>", "<s>", "</s>"]


def train_sp(corpus, vocab_size, bytes_kept=256):
    """SentencePiece-style vocab and merges: a BPE learned over Metaspace
    words, laid out as Llama-2's (specials, <0xNN> byte tokens, pieces)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, limit_alphabet=70, show_progress=False)
    tok.train([corpus], trainer)
    learned = json.loads(tok.to_str())["model"]
    vocab = {t: i for i, t in enumerate(SP_SPECIALS)}
    for b in range(bytes_kept):
        vocab["<0x%02X>" % b] = len(vocab)
    for t, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(t, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in learned["merges"]]
    return vocab, merges


def sp_tokenizer(vocab, merges, normalizer, pre_tokenizer, decoder, bos=True):
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SP_SPECIALS])
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoder
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                           special_tokens=[("<s>", vocab["<s>"])])
    return tok


def llama_decoder():
    return decoders.Sequence([decoders.Replace(SP, " "), decoders.ByteFallback(), decoders.Fuse(),
                              decoders.Strip(" ", 1, 0)])


def train_base(corpus, vocab_size, pre_tokenizer, special_tokens):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([corpus], trainer)
    return tok


def save(tok, name, merges_as_strings=False, edit=None):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "tokenizer.json")
    tok.save(path, pretty=True)
    if merges_as_strings or edit:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        if merges_as_strings:
            j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
        if edit:
            edit(j)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False, indent=1)
    return Tokenizer.from_file(path)  # what the C++ side reads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpe-train", help="path to a built bpe_train")
    args = ap.parse_args()
    corpus = os.path.join(HERE, "corpus.txt")
    make_corpus(corpus)

    variants = {}
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    base = train_base(corpus, 800, byte_level, SPECIALS[:3])
    variants["gpt2"] = save(base, "gpt2", merges_as_strings=True)

    pre = train_base(corpus, 800, pre_tokenizers.ByteLevel(add_prefix_space=True), SPECIALS[:1])
    variants["gpt2_prefix"] = save(pre, "gpt2_prefix")

    qwen = train_base(corpus, 800, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), SPECIALS[:3])
    qwen.add_special_tokens([AddedToken("[MASK]", lstrip=True, special=True)])
    qwen.add_tokens([AddedToken("<eot>", rstrip=True, normalized=False),
                     AddedToken("hello world", normalized=True),
                     AddedToken("<sw>", single_word=True, normalized=False)])
    variants["qwen2"] = save(qwen, "qwen2")

    llama = train_base(corpus, 800, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        ["<|begin_of_text|>", "<|end_of_text|>"])
    bos = llama.token_to_id("<|begin_of_text|>")
    llama.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    llama.normalizer = None

    def ignore_merges(j):
        j["model"]["ignore_merges"] = True
    variants["llama3"] = save(llama, "llama3", edit=ignore_merges)

    splits = train_base(corpus, 600, pre_tokenizers.Sequence([
        pre_tokenizers.Split("-", behavior="removed"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Split(Regex(r"[.,!?]+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{P}"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[^\t]+"), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)]), SPECIALS[:1])
    splits.normalizer = normalizers.Sequence([normalizers.NFKC()])
    splits.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", 0)])
    variants["splits"] = save(splits, "splits")

    vocab, merges = train_sp(corpus, 900)
    variants["llama2"] = save(sp_tokenizer(
        vocab, merges, normalizers.Sequence([normalizers.Prepend(SP), normalizers.Replace(" ", SP)]),
        None, llama_decoder()), "llama2")
    variants["llama2_first"] = save(sp_tokenizer(
        vocab, merges, None, pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="first", split=False),
        llama_decoder()), "llama2_first")
    meta = sp_tokenizer(vocab, merges, normalizers.NFKC(),
                        pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="always", split=True),
                        decoders.Sequence([decoders.ByteFallback(),
                                           decoders.Metaspace(replacement=SP, prepend_scheme="always")]),
                        bos=False)
    meta.add_tokens([AddedToken("hello world", normalized=True)])
    variants["metaspace"] = save(meta, "metaspace")
    variants["metaspace_never"] = save(sp_tokenizer(
        vocab, merges, None, pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="never", split=True),
        decoders.Metaspace(replacement=SP, prepend_scheme="never"), bos=False), "metaspace_never")
    vocab_ascii, merges_ascii = train_sp(corpus, 800, bytes_kept=128)
    variants["sp_unk"] = save(sp_tokenizer(
        vocab_ascii, merges_ascii, normalizers.Sequence([normalizers.Prepend(SP), normalizers.Replace(" ", SP)]),
        None, llama_decoder()), "sp_unk")

    # transformers' GGUF converter on a byte-level BPE (tokenizer.ggml.model
    # "gpt2", architecture llama): the Llama converter's BPE options and
    # decoder around a ByteLevel pre-tokenizer.
    gguf_base = json.loads(variants["gpt2"].to_str())
    gguf = Tokenizer(models.BPE(vocab=gguf_base["model"]["vocab"],
                                merges=[tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1))
                                        for m in gguf_base["model"]["merges"]],
                                unk_token="<|endoftext|>", fuse_unk=True, byte_fallback=True))
    gguf.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIALS[:3]])
    gguf.normalizer = normalizers.Sequence([])
    gguf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=True)
    gguf.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Replace(SP, " "),
                                      decoders.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                                         use_regex=True)])
    variants["gguf"] = save(gguf, "gguf")

    if args.bpe_train:
        out = os.path.join(HERE, "bpe_train", "tokenizer.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([args.bpe_train, "--corpus", corpus, "--vocab-size", "700", "--out", out,
                        "--special", "<|endoftext|>,<|im_start|>,<|im_end|>"], check=True)
        variants["bpe_train"] = Tokenizer.from_file(out)  # HF must load it
    else:
        print("note: --bpe-train not given; bpe_train fixtures not refreshed", file=sys.stderr)
        out = os.path.join(HERE, "bpe_train", "tokenizer.json")
        if os.path.exists(out):
            variants["bpe_train"] = Tokenizer.from_file(out)

    golden = {}
    for name, tok in variants.items():
        cases = []
        for s in STRINGS + random_strings(150):
            ids = tok.encode(s, add_special_tokens=False).ids
            cases.append({
                "text": s,
                "ids": ids,
                "ids_special": tok.encode(s, add_special_tokens=True).ids,
                "decoded": tok.decode(ids, skip_special_tokens=False),
            })
        golden[name] = {"vocab_size": tok.get_vocab_size(with_added_tokens=True), "cases": cases}
    with open(os.path.join(HERE, "ids.json"), "w", encoding="utf-8") as f:
        # One case per line: small and diffable.
        f.write("{\n")
        for i, (name, g) in enumerate(golden.items()):
            f.write(json.dumps(name) + ": {\"vocab_size\": %d, \"cases\": [\n" % g["vocab_size"])
            f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in g["cases"]))
            f.write("\n]}" + (",\n" if i + 1 < len(golden) else "\n"))
        f.write("}\n")
    rng = __import__("random").Random(99)
    atoms = [b"a", b"Z", b" ", b"\n", b"\t", b"7", b"'s", b"'LL", b".", "\u00e9".encode(),
             "\ud55c".encode(), "\U0001F600".encode(), b"<|begin_of_text|>", b"<|endoftext|>",
             b"<|begin", b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f", b"\x80", b"\xed\xa0\x80",
             b"\xc0\xaf", b"\x00", b"\xf4\x90\x80\x80"]
    byte_cases = {}
    for name in ["llama3", "qwen2", "llama2", "sp_unk"]:
        tok = variants[name]
        cases = []
        for _ in range(150):
            raw = b"".join(bytes([rng.randrange(256)]) if rng.random() < 0.25 else rng.choice(atoms)
                           for _ in range(rng.randint(1, 20)))
            ids = tok.encode(raw.decode("utf-8", errors="replace"), add_special_tokens=False).ids
            cases.append({"hex": raw.hex(), "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
        byte_cases[name] = cases
    with open(os.path.join(HERE, "bytes.json"), "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(
            json.dumps(name) + ": [\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]"
            for name, cases in byte_cases.items()) + "\n}\n")
    import tokenizers
    print("tokenizers", tokenizers.__version__, "variants:", ", ".join(golden))


if __name__ == "__main__":
    main()
