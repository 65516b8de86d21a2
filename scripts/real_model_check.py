#!/usr/bin/env python3
"""The Python side of scripts/check-real-model.sh (runs in its venv).

    real_model_check.py convert --gguf FILE.gguf --out DIR
    real_model_check.py check --model DIR --build BUILD --work DIR [--skip-speed] [--speed-only]
    real_model_check.py check --quantize nf4 --model DIR --build BUILD --work DIR [--skip-speed]
    real_model_check.py hf-train --model DIR --data FILE --targets q_proj,v_proj ... [--quantize nf4]
                                                                        (one speed run)

convert: transformers reads the GGUF (dequantized to float32) and writes a
  Hugging Face folder: config.json, model.safetensors, tokenizer.json,
  tokenizer_config.json.
check: compares lora_train with transformers (+ PEFT) on that folder:
  1. tokenizer ids and decodes (build/bin/tokenize against the `tokenizers`
     backend) on varied texts and one long text;
  2. base eval loss (lora_train --max-steps 0) against transformers';
  3. a short LoRA training with lora_train, its adapter loaded with
     PeftModel.from_pretrained: PEFT's eval loss against lora_train's;
  4. tokens/s and peak RSS of lora_train and transformers + PEFT, 2 threads,
     batch 4, r 8: q,v on short examples, all 7 projections on short
     examples, q,v on 256-token texts (unless --skip-speed).
  Prints a summary and writes WORK/results.json. Exit 1 if a comparison fails.
check --quantize nf4 (QLoRA; needs bitsandbytes): the same model with its
  decoder projections in NF4 with double quantization, on both sides
  (lora_train --quantize nf4 --double-quant; transformers with
  BitsAndBytesConfig(load_in_4bit, nf4, double quant, compute dtype float32)
  on the CPU):
  1. base eval loss in 4-bit (and lora_train's fp32 one, for scale);
  2. 8 LoRA steps from the same adapter (lora_train's initial one, loaded
     into PEFT as trainable) on the same full batch, dropout 0, constant
     lr, clipping 1.0, AdamW without weight decay: the train loss of every
     step and the final eval loss, lora_train against transformers + PEFT;
  3. lora_train's trained adapter loaded with PeftModel.from_pretrained on
     a 4-bit base: its eval loss against lora_train's;
  4. CPU seconds per 1000 trained tokens (as --cpu-time) and peak RSS of
     lora_train fp32, lora_train nf4 and transformers + PEFT + bitsandbytes
     nf4 on 256-token texts, all 7 projections (runs of --speed-steps N and
     2N steps, default 4; unless --skip-speed).
  Writes WORK/results-nf4.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ALL7 = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
LICENSES = ["Apache-2.0", "Artistic", "BSD", "GFDL-1.3", "GPL-2", "GPL-3", "LGPL-2.1", "LGPL-3", "MPL-2.0"]

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing   spaces   ",
    "tabs\tand\nnewlines\n\n\nand\r\nCRLF",
    "   \n  \n\t\t \n",
    "x          y",
    "numbers 1234567 and 3.14159, 2026-11-22, 42nd, 1,000,000",
    "punctuation!!! ??? ... --- (parens) [brackets] {braces} @#$%^&*",
    "I'M SURE it's what they'd've WANTED, y'all'll see",
    "emoji: \U0001F600\U0001F389\U0001F44D\U0001F3FD family \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "Korean: \uc548\ub155\ud558\uc138\uc694, \uc138\uacc4!",
    "Mixed \u4e2d\u6587 and English \u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8",
    "Caf\u00e9, na\u00efve, r\u00e9sum\u00e9 \u2014 e\u0301 vs \u00e9, \u212b",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "def f(x):\n    return x**2  # comment\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
    "<|endoftext|>special tokens in text<|endoftext|>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "",
    " ",
    "\n",
    "\u2581metaspace\u2581char and <0x41> byte-token text",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी",
    "https://example.com/path?query=1&x=y#frag",
    "snake_case_names and camelCaseNames and CONSTANT_NAMES",
    "tab\tseparated\tvalues\t1\t2\t3",
    "    four leading spaces",
    "trailing newline\n",
    "math: \u2211 x\u00b2 \u2264 \u221e, \u03c0 \u2248 3.14",
    "zero\u200bwidth and soft\u00adhyphen",
]


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def license_text():
    parts = []
    for name in LICENSES:
        p = os.path.join("/usr/share/common-licenses", name)
        if os.path.exists(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                parts.append(f.read())
    return "\n\n".join(parts)


def long_text():
    """The tokenizer check's long text: the licenses plus, where the Debian
    `fortunes` package is installed, some of its cookie files."""
    parts = [license_text()]
    for name in ["computers", "science", "linux", "wisdom"]:
        p = os.path.join("/usr/share/games/fortunes", name)
        if os.path.exists(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                parts.append(f.read())
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------
# convert

def cmd_convert(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    d, f = os.path.split(os.path.abspath(args.gguf))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    tmp = args.out + ".tmp"
    try:
        model.save_pretrained(tmp, safe_serialization=True)
    except ValueError:
        # transformers 5 will not save a model it read from a GGUF ("quantized
        # with gguf"); its tensors are plain float32 by now: write them.
        from safetensors.torch import save_file
        os.makedirs(tmp, exist_ok=True)
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.config.save_pretrained(tmp)
        tied = getattr(model.config, "tie_word_embeddings", False)
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()
                 if not (tied and k == "lm_head.weight")}
        save_file(state, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
    tok.save_pretrained(tmp)
    if os.path.exists(args.out):
        import shutil
        shutil.rmtree(args.out)
    os.replace(tmp, args.out)
    print("converted", args.gguf, "->", args.out)


# ---------------------------------------------------------------------------
# data

def make_data(work, hf_tok):
    """Writes the check's data sets into `work`:
    eval.jsonl   16 text examples of about 300 tokens (cut to 256)
    long.jsonl   64 text examples of about 300 tokens (cut to 256), training
    short.jsonl  96 instruction examples of 20-70 tokens."""
    text = license_text()
    paras = [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) > 40]
    # Texts of ~300 tokens: consecutive paragraphs joined.
    chunks, cur = [], ""
    for p in paras:
        cur = (cur + "\n\n" + p) if cur else p
        if len(hf_tok(cur, add_special_tokens=False).input_ids) >= 300:
            chunks.append(cur)
            cur = ""
    write_jsonl(os.path.join(work, "eval.jsonl"), [{"text": c} for c in chunks[:16]])
    write_jsonl(os.path.join(work, "long.jsonl"), [{"text": c} for c in chunks[16:80]])
    sentences = [s.strip() for s in re.split(r"(?<=[.;:])\s+", " ".join(text.split())) if 60 < len(s) < 260]
    short = []
    for s in sentences[:96]:
        words = s.split()
        half = len(words) // 2
        short.append({"instruction": "Continue the sentence: " + " ".join(words[:half]),
                      "response": " ".join(words[half:])})
    write_jsonl(os.path.join(work, "short.jsonl"), short)
    return len(chunks)


def example_ids(hf_tok, row, seq_len):
    """ids and loss mask of one JSONL row, as lora_train's data loader builds
    them: [prefix] prompt response eos [suffix], loss on response + eos."""
    eos = hf_tok.eos_token_id
    probe = hf_tok("x", add_special_tokens=True).input_ids
    plain = hf_tok("x", add_special_tokens=False).input_ids
    k = probe.index(plain[0]) if plain and plain[0] in probe else 0
    prefix, suffix = probe[:k], probe[k + len(plain):]
    if suffix and suffix[0] == eos:
        suffix = suffix[1:]
    ids, mask = list(prefix), [0] * len(prefix)
    if "text" in row:
        t = hf_tok(row["text"], add_special_tokens=False).input_ids
        ids += t
        mask += [1] * len(t)
    else:
        prompt = "### Instruction:\n" + row["instruction"] + "\n\n### Response:\n"
        p = hf_tok(prompt, add_special_tokens=False).input_ids
        r = hf_tok(row["response"], add_special_tokens=False).input_ids
        ids += p + r
        mask += [0] * len(p) + [1] * len(r)
    ids.append(eos)
    mask.append(1)
    ids += suffix
    mask += [0] * len(suffix)
    return ids[:seq_len], mask[:seq_len]


def batch_tensors(examples, pad_id):
    import torch
    T = max(2, max(len(i) for i, _ in examples))
    ids = torch.full((len(examples), T), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), T), -100, dtype=torch.long)
    attn = torch.zeros((len(examples), T), dtype=torch.long)
    for b, (i, m) in enumerate(examples):
        ids[b, :len(i)] = torch.tensor(i)
        attn[b, :len(i)] = 1
        labels[b, :len(i)] = torch.tensor([t if mm else -100 for t, mm in zip(i, m)])
    return ids, attn, labels


def loss_sum(model, ids, attn, labels):
    import torch
    logits = model(input_ids=ids, attention_mask=attn).logits.float()
    shift_logits = logits[:, :-1].reshape(-1, logits.shape[-1])
    shift_labels = labels[:, 1:].reshape(-1)
    n = int((shift_labels != -100).sum())
    return torch.nn.functional.cross_entropy(shift_logits, shift_labels, ignore_index=-100, reduction="sum"), n


def hf_eval_loss(model, hf_tok, rows, seq_len):
    import torch
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for row in rows:  # one at a time: no padding involved
            ids, attn, labels = batch_tensors([example_ids(hf_tok, row, seq_len)], hf_tok.eos_token_id)
            s, n = loss_sum(model, ids, attn, labels)
            total += float(s.double())
            count += n
    return total / count


# ---------------------------------------------------------------------------
# lora_train runs

def run_with_usage(cmd, env=None):
    """(exit code, stdout, stderr, resource usage of the finished child)."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read(), usage


def run_with_rss(cmd, env=None):
    rc, out, err, usage = run_with_usage(cmd, env)
    return rc, out, err, usage.ru_maxrss / 1024.0


def lora_train(build, args, env):
    cmd = [os.path.join(build, "bin", "lora_train")] + args
    rc, out, err, rss = run_with_rss(cmd, env)
    if rc != 0:
        sys.exit("lora_train failed (%d): %s\n%s" % (rc, " ".join(cmd), err[-3000:]))
    return out, rss


def metric_lines(out):
    rows = []
    for line in out.splitlines():
        if line.startswith("step="):
            rows.append(dict(kv.split("=", 1) for kv in line.split()))
    return rows


# ---------------------------------------------------------------------------
# transformers with bitsandbytes (QLoRA)

def hf_4bit(model_dir, quant_type):
    """The model with every decoder Linear in 4 bits (double quantization,
    float32 compute), on the CPU, as BitsAndBytesConfig loads it. bitsandbytes'
    CPU inference path for eval mode without grad (a repacked weight and a
    bf16 kernel where the CPU has avx512_bf16) is switched off: every forward
    is matmul_4bit (dequantize_4bit, then F.linear), as in training and as
    lora_train computes (tests/trainer/golden/make_quant_golden.py does the same)."""
    import torch
    import bitsandbytes as bnb
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant_type, bnb_4bit_use_double_quant=True,
                             bnb_4bit_compute_dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(model_dir, quantization_config=cfg, dtype=torch.float32,
                                                 device_map="cpu")
    n = 0
    for m in model.modules():
        if isinstance(m, bnb.nn.Linear4bit):
            m.support_avx512bf16_for_cpu = False
            n += 1
    assert n == 7 * model.config.num_hidden_layers, n
    return model


# ---------------------------------------------------------------------------
# transformers + PEFT training speed (one process per run, for its own RSS)

def cmd_hf_train(args):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    hf_tok = AutoTokenizer.from_pretrained(args.model)
    if args.quantize:
        model = hf_4bit(args.model, args.quantize)
    else:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=args.r, lora_alpha=2 * args.r, lora_dropout=0.05,
                                             target_modules=args.targets.split(","), task_type="CAUSAL_LM"))
    model.train()
    rows = read_jsonl(args.data)
    examples = [example_ids(hf_tok, r, args.seq_len) for r in rows]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, weight_decay=0.0)
    tokens = seconds = 0.0
    losses = []
    for step in range(args.steps):
        batch = [examples[(step * args.batch + i) % len(examples)] for i in range(args.batch)]
        t0 = time.perf_counter()
        ids, attn, labels = batch_tensors(batch, hf_tok.eos_token_id)
        s, n = loss_sum(model, ids, attn, labels)
        (s / max(1, n)).backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        opt.step()
        opt.zero_grad()
        dt = time.perf_counter() - t0
        losses.append(float(s.detach()) / max(1, n))
        if step >= args.skip:
            tokens += sum(len(i) for i, _ in batch)
            seconds += dt
    print("RESULT " + json.dumps({"tokens_per_s": tokens / seconds, "loss_first": losses[0],
                                  "loss_last": losses[-1], "torch": torch.__version__,
                                  "mkl": torch.backends.mkl.is_available()}))


def hf_speed(model_dir, data, targets, steps, skip, seq_len, threads):
    cmd = [sys.executable, os.path.abspath(__file__), "hf-train", "--model", model_dir, "--data", data,
           "--targets", targets, "--steps", str(steps), "--skip", str(skip), "--seq-len", str(seq_len),
           "--threads", str(threads)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    rc, out, err, rss = run_with_rss(cmd, env)
    if rc != 0:
        sys.exit("hf-train failed: " + err[-3000:])
    r = json.loads([l for l in out.splitlines() if l.startswith("RESULT ")][-1][7:])
    r["peak_rss_mib"] = rss
    return r


def lt_speed(build, model_dir, data, targets, steps, skip, seq_len, threads, work, name):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out_dir = os.path.join(work, "speed-" + name)
    subprocess.run(["rm", "-rf", out_dir], check=True)
    out, rss = lora_train(build, ["--base", model_dir, "--data", data, "--eval-data", os.path.join(work, "eval.jsonl"),
                                  "--eval-max-examples", "1", "--max-steps", str(steps), "--log-every", str(skip),
                                  "--eval-every", "0", "--batch-size", "4", "--seq-len", str(seq_len),
                                  "--lora-r", "8", "--lora-alpha", "16", "--lora-dropout", "0.05",
                                  "--target-modules", targets, "--lr", "1e-4", "--schedule", "constant",
                                  "--threads", str(threads), "--output", out_dir, "--no-auto-resume"], env)
    rows = metric_lines(out)
    # Windows after the first `skip` steps (the first one holds the warm-up).
    later = [float(r["tokens_per_s"]) for r in rows[1:] if float(r["tokens_per_s"]) > 0]
    subprocess.run(["rm", "-rf", out_dir], check=True)
    return {"tokens_per_s": sum(later) / len(later), "windows": later, "peak_rss_mib": rss}


def cpu_seconds(usage):
    return usage.ru_utime + usage.ru_stime


def cpu_run_command(build, model_dir, data, work, steps, targets, threads):
    """lora_train for `steps` steps of the CPU-time comparison (batch 4 x 256,
    r 8, no eval), into a fresh <work>/cpu-run."""
    out_dir = os.path.join(work, "cpu-run")
    subprocess.run(["rm", "-rf", out_dir], check=True)
    return [os.path.join(build, "bin", "lora_train"), "--base", model_dir, "--data", data,
            "--eval-data", os.path.join(work, "eval.jsonl"), "--eval-max-examples", "1",
            "--max-steps", str(steps), "--log-every", str(steps), "--eval-every", "0", "--batch-size", "4",
            "--seq-len", "256", "--lora-r", "8", "--lora-alpha", "16", "--lora-dropout", "0.05",
            "--target-modules", targets, "--lr", "1e-4", "--schedule", "constant",
            "--threads", str(threads), "--output", out_dir, "--no-auto-resume"]


def cpu_per_ktoken(build, model_dir, data, targets, steps, tokens, work, threads):
    """CPU seconds (user + system) per 1000 trained tokens of each side: the
    difference between a run of 2 * steps and one of `steps` steps, so that
    start-up, model loading and the final evaluation cancel out. `tokens` is
    what the extra steps train (the same on both sides: a whole epoch, or
    full-length texts). CPU time, unlike wall time, hardly moves when other
    processes share the machine; with one thread there is no spin-waiting in
    it either."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = {}
    for side in ("lora_train", "hf_peft"):
        cpu = []
        for n in (steps, 2 * steps):
            if side == "lora_train":
                cmd = cpu_run_command(build, model_dir, data, work, n, targets, threads)
            else:
                cmd = [sys.executable, os.path.abspath(__file__), "hf-train", "--model", model_dir, "--data", data,
                       "--targets", targets, "--steps", str(n), "--skip", "0", "--seq-len", "256",
                       "--threads", str(threads)]
            rc, _, err, usage = run_with_usage(cmd, env)
            if rc != 0:
                sys.exit("%s failed (%d): %s\n%s" % (side, rc, " ".join(cmd), err[-3000:]))
            cpu.append(cpu_seconds(usage))
        subprocess.run(["rm", "-rf", os.path.join(work, "cpu-run")], check=True)
        out[side] = {"cpu_s_per_ktoken": 1000.0 * (cpu[1] - cpu[0]) / tokens, "cpu_s": cpu}
    out["tokens"] = tokens
    out["lora_train_speedup"] = out["hf_peft"]["cpu_s_per_ktoken"] / out["lora_train"]["cpu_s_per_ktoken"]
    return out


# ---------------------------------------------------------------------------
# check

def cmd_check(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(args.threads)
    work = args.work
    os.makedirs(work, exist_ok=True)
    results = {"model": args.model}
    failures = []
    hf_tok = AutoTokenizer.from_pretrained(args.model)
    backend = hf_tok.backend_tokenizer
    n_chunks = make_data(work, hf_tok)
    results["data"] = {"long_texts": n_chunks}

    if not args.speed_only:
        # 1. Tokenizer.
        long = long_text()
        texts = TEXTS + [long]
        write_jsonl(os.path.join(work, "texts.jsonl"), [{"text": t} for t in texts])
        mism = []
        total_tokens = 0
        for special in (False, True):
            cmd = [os.path.join(args.build, "bin", "tokenize"), "--tokenizer",
                   os.path.join(args.model, "tokenizer.json"), "--in", os.path.join(work, "texts.jsonl")]
            if special:
                cmd.append("--add-special")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
            for t, line in zip(texts, out):
                got = json.loads(line)
                want = hf_tok(t, add_special_tokens=special).input_ids
                want_dec = backend.decode(want, skip_special_tokens=False)
                if not special:
                    total_tokens += len(want)
                if got["ids"] != want or (not special and got["decoded"] != want_dec):
                    mism.append({"text": t[:80], "special": special, "ids": got["ids"][:40], "want": want[:40],
                                 "decoded": got["decoded"][:80], "want_decoded": want_dec[:80]})
        results["tokenizer"] = {"texts": len(texts), "tokens": total_tokens, "long_text_tokens":
                                len(hf_tok(long, add_special_tokens=False).input_ids),
                                "mismatches": len(mism), "first_mismatches": mism[:3]}
        if mism:
            failures.append("tokenizer: %d of %d texts differ" % (len(mism), 2 * len(texts)))
        print("tokenizer:", json.dumps(results["tokenizer"], ensure_ascii=False)[:400], flush=True)

        # 2. Base eval loss.
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        common = ["--base", args.model, "--eval-data", os.path.join(work, "eval.jsonl"), "--seq-len", "256",
                  "--batch-size", "4", "--threads", str(args.threads), "--metric-digits", "10", "--no-auto-resume"]
        out, rss = lora_train(args.build, common + ["--data", os.path.join(work, "short.jsonl"), "--max-steps", "0",
                                                    "--output", os.path.join(work, "base")], env)
        lt_base = float(metric_lines(out)[-1]["eval_loss"])
        base_model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
        eval_rows = read_jsonl(os.path.join(work, "eval.jsonl"))
        hf_base = hf_eval_loss(base_model, hf_tok, eval_rows, 256)
        results["base_eval_loss"] = {"lora_train": lt_base, "transformers": hf_base,
                                     "abs_diff": abs(lt_base - hf_base), "lora_train_peak_rss_mib": rss}
        print("base eval loss:", json.dumps(results["base_eval_loss"]), flush=True)
        if not abs(lt_base - hf_base) <= 1e-4 * max(1.0, abs(hf_base)):
            failures.append("base eval loss: lora_train %.8f, transformers %.8f" % (lt_base, hf_base))

        # 3. A short LoRA training; PEFT loads the adapter.
        from peft import PeftModel
        adapter = os.path.join(work, "adapter")
        subprocess.run(["rm", "-rf", adapter], check=True)
        out, _ = lora_train(args.build, common + ["--data", os.path.join(work, "long.jsonl"), "--max-steps", "8",
                                                  "--lr", "1e-3", "--lora-r", "8", "--lora-alpha", "16",
                                                  "--lora-dropout", "0.05", "--target-modules", ALL7,
                                                  "--eval-every", "0", "--output", adapter], env)
        lt_lora = float(metric_lines(out)[-1]["eval_loss"])
        peft_model = PeftModel.from_pretrained(base_model, adapter)
        hf_lora = hf_eval_loss(peft_model, hf_tok, eval_rows, 256)
        results["lora_eval_loss"] = {"lora_train": lt_lora, "peft": hf_lora, "abs_diff": abs(lt_lora - hf_lora),
                                     "base": hf_base, "steps": 8, "targets": ALL7}
        print("LoRA eval loss:", json.dumps(results["lora_eval_loss"]), flush=True)
        if not abs(lt_lora - hf_lora) <= 1e-4 * max(1.0, abs(hf_lora)):
            failures.append("LoRA eval loss: lora_train %.8f, PEFT %.8f" % (lt_lora, hf_lora))
        if not hf_lora < hf_base - 1e-3:
            failures.append("LoRA training did not lower the eval loss (%.6f -> %.6f)" % (hf_base, hf_lora))
        del peft_model, base_model

    # 4. Speed.
    if args.cpu_time:
        # The extra steps: one epoch of the 96 short examples (24 batches of
        # 4, the same examples on both sides whatever their order), and 4
        # batches of 4 texts of 256 tokens.
        long_lengths = [len(example_ids(hf_tok, r, 256)[0]) for r in read_jsonl(os.path.join(work, "long.jsonl"))]
        long_mean = sum(long_lengths) / len(long_lengths)
        short_tokens = sum(len(example_ids(hf_tok, r, 256)[0]) for r in read_jsonl(os.path.join(work, "short.jsonl")))
        workloads = [("short_qv", "short.jsonl", "q_proj,v_proj", 24, short_tokens),
                     ("short_all7", "short.jsonl", ALL7, 24, short_tokens),
                     ("text256_qv", "long.jsonl", "q_proj,v_proj", 4, 16 * long_mean)]
        cpu = {}
        for name, data, targets, steps, tokens in workloads:
            r = cpu_per_ktoken(args.build, args.model, os.path.join(work, data), targets, steps, tokens, work,
                               args.threads)
            cpu[name] = r
            print("cpu %-11s lora_train %6.2f CPU-s per 1000 tokens   transformers+PEFT %6.2f   lora_train faster by "
                  "%.2fx" % (name, r["lora_train"]["cpu_s_per_ktoken"], r["hf_peft"]["cpu_s_per_ktoken"],
                             r["lora_train_speedup"]), flush=True)
        results["cpu_time"] = cpu
        results["cpu_time_env"] = {"threads": args.threads, "torch": torch.__version__,
                                   "mkl": torch.backends.mkl.is_available(), "loadavg_end": os.getloadavg()}
    elif not args.skip_speed:
        workloads = [("short_qv", "short.jsonl", "q_proj,v_proj", args.short_steps, args.short_skip),
                     ("short_all7", "short.jsonl", ALL7, args.short_steps, args.short_skip),
                     ("text256_qv", "long.jsonl", "q_proj,v_proj", args.long_steps, args.long_skip)]
        speed = {}
        for rep in range(args.repeats):
            for name, data, targets, steps, skip in workloads:
                d = os.path.join(work, data)
                lt = lt_speed(args.build, args.model, d, targets, steps, skip, 256, args.threads, work, name)
                hf = hf_speed(args.model, d, targets, steps, skip, 256, args.threads)
                speed.setdefault(name, []).append({"lora_train": lt, "hf_peft": hf})
                print("speed %-11s rep %d: lora_train %7.1f tokens/s (%6.0f MiB)   transformers+PEFT %7.1f tokens/s "
                      "(%6.0f MiB)   ratio %.2f" % (name, rep + 1, lt["tokens_per_s"], lt["peak_rss_mib"],
                                                     hf["tokens_per_s"], hf["peak_rss_mib"],
                                                     lt["tokens_per_s"] / hf["tokens_per_s"]), flush=True)
        results["speed"] = speed
        results["speed_env"] = {"threads": args.threads, "batch": 4, "r": 8, "torch": torch.__version__,
                                "mkl": torch.backends.mkl.is_available(), "nproc": os.cpu_count(),
                                "loadavg_end": os.getloadavg()}

    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
    print(json.dumps({k: v for k, v in results.items() if k != "speed"}, indent=1, ensure_ascii=False))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("real-model check passed" + (" (speed only)" if args.speed_only else ""))
    return 0


# ---------------------------------------------------------------------------
# check --quantize nf4

def hf_train_steps(model, hf_tok, rows, seq_len, steps, lr, clip):
    """PEFT's side of the 8-step comparison: every step the full batch of
    `rows`, loss summed over target tokens / their count (lora_train's
    normalisation), clipping, AdamW (no weight decay), constant lr."""
    import torch
    examples = [example_ids(hf_tok, r, seq_len) for r in rows]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(steps):
        ids, attn, labels = batch_tensors(examples, hf_tok.eos_token_id)
        s, n = loss_sum(model, ids, attn, labels)
        (s / n).backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        opt.zero_grad()
        losses.append(float(s.detach().double()) / n)
    return losses


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def cpu_and_rss(build, model_dir, work, data, targets, steps, tokens, threads, quantize):
    """CPU seconds per 1000 trained tokens (the difference between runs of
    2 * steps and `steps` steps, as cpu_per_ktoken), both runs' wall time,
    and the peak RSS of the two runs, for
    lora_train fp32, lora_train nf4 (double quant) and transformers + PEFT +
    bitsandbytes nf4 (double quant), batch 4, r 8, dropout 0.05."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    sides = [("lora_train_fp32", []), ("lora_train_" + quantize, ["--quantize", quantize, "--double-quant"]),
             ("hf_peft_bnb_" + quantize, None)]
    out = {}
    for side, qargs in sides:
        cpu, wall, rss = [], [], []
        for n in (steps, 2 * steps):
            if qargs is not None:
                cmd = cpu_run_command(build, model_dir, data, work, n, targets, threads) + qargs
            else:
                cmd = [sys.executable, os.path.abspath(__file__), "hf-train", "--model", model_dir, "--data", data,
                       "--targets", targets, "--steps", str(n), "--skip", "0", "--seq-len", "256",
                       "--threads", str(threads), "--quantize", quantize]
            t0 = time.perf_counter()
            rc, _, err, usage = run_with_usage(cmd, env)
            wall.append(time.perf_counter() - t0)
            if rc != 0:
                sys.exit("%s failed (%d): %s\n%s" % (side, rc, " ".join(cmd), err[-3000:]))
            cpu.append(cpu_seconds(usage))
            rss.append(usage.ru_maxrss / 1024.0)
        subprocess.run(["rm", "-rf", os.path.join(work, "cpu-run")], check=True)
        # Wall time is kept raw: on a shared machine the difference of two
        # runs' wall times can even come out negative.
        out[side] = {"cpu_s_per_ktoken": 1000.0 * (cpu[1] - cpu[0]) / tokens,
                     "tokens_per_cpu_s": tokens / (cpu[1] - cpu[0]), "cpu_s": cpu, "wall_s": wall,
                     "peak_rss_mib": max(rss)}
        print("cpu %-22s %6.2f CPU-s per 1000 tokens (%6.1f tokens per CPU-s; wall %s s), peak RSS %6.0f MiB"
              % (side, out[side]["cpu_s_per_ktoken"], out[side]["tokens_per_cpu_s"],
                 " / ".join("%.0f" % w for w in wall), out[side]["peak_rss_mib"]), flush=True)
    out["tokens"] = tokens
    return out


def cmd_check_quant(args):
    import torch
    from peft import PeftModel
    from transformers import AutoTokenizer
    torch.set_num_threads(args.threads)
    q = args.quantize
    work = args.work
    os.makedirs(work, exist_ok=True)
    results = {"model": args.model, "quantize": q, "double_quant": True, "compute_dtype": "float32"}
    failures = []
    hf_tok = AutoTokenizer.from_pretrained(args.model)
    make_data(work, hf_tok)
    eval_rows = read_jsonl(os.path.join(work, "eval.jsonl"))
    train_rows = read_jsonl(os.path.join(work, "long.jsonl"))[:4]
    write_jsonl(os.path.join(work, "train4.jsonl"), train_rows)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    steps, lr, clip = 8, 1e-3, 1.0
    common = ["--base", args.model, "--eval-data", os.path.join(work, "eval.jsonl"), "--seq-len", "256",
              "--batch-size", "4", "--threads", str(args.threads), "--metric-digits", "10", "--no-auto-resume",
              "--data", os.path.join(work, "train4.jsonl"), "--lr", str(lr), "--clip", str(clip),
              "--schedule", "constant", "--weight-decay", "0", "--lora-r", "8", "--lora-alpha", "16",
              "--lora-dropout", "0", "--target-modules", ALL7, "--eval-every", "0", "--log-every", "1"]
    quant = ["--quantize", q, "--double-quant"]

    if not args.speed_only:
        # 1. Base eval loss in 4-bit; the run writes the initial adapter.
        init = os.path.join(work, "adapter-init-" + q)
        subprocess.run(["rm", "-rf", init], check=True)
        out, rss = lora_train(args.build, common + quant + ["--max-steps", "0", "--output", init], env)
        lt_base = float(metric_lines(out)[-1]["eval_loss"])
        out, _ = lora_train(args.build, common + ["--max-steps", "0", "--output", os.path.join(work, "base-fp32")],
                            env)
        lt_base_fp32 = float(metric_lines(out)[-1]["eval_loss"])
        base = hf_4bit(args.model, q)
        hf_base = hf_eval_loss(base, hf_tok, eval_rows, 256)
        results["base_eval_loss"] = {"lora_train": lt_base, "transformers_bnb": hf_base,
                                     "rel_diff": rel(lt_base, hf_base), "lora_train_fp32": lt_base_fp32,
                                     "lora_train_peak_rss_mib": rss}
        print("base eval loss (4-bit):", json.dumps(results["base_eval_loss"]), flush=True)
        if not rel(lt_base, hf_base) <= 1e-5:
            failures.append("base eval loss: lora_train %.8f, transformers + bitsandbytes %.8f" % (lt_base, hf_base))

        # 2. 8 steps on both sides from lora_train's initial adapter.
        adapter = os.path.join(work, "adapter-" + q)
        subprocess.run(["rm", "-rf", adapter], check=True)
        out, _ = lora_train(args.build, common + quant + ["--max-steps", str(steps), "--output", adapter], env)
        rows = metric_lines(out)
        lt_losses = [float(r["train_loss"]) for r in rows if "train_loss" in r and r["train_loss"] != "nan"]
        lt_eval = float(rows[-1]["eval_loss"])
        peft_train = PeftModel.from_pretrained(base, init, is_trainable=True)
        hf_losses = hf_train_steps(peft_train, hf_tok, train_rows, 256, steps, lr, clip)
        hf_eval = hf_eval_loss(peft_train, hf_tok, eval_rows, 256)
        diffs = [rel(a, b) for a, b in zip(lt_losses, hf_losses)]
        results["lora_training"] = {"steps": steps, "lora_train_train_loss": lt_losses, "peft_train_loss": hf_losses,
                                    "max_rel_diff": max(diffs), "rel_diff_by_step": diffs,
                                    "lora_train_eval_loss": lt_eval, "peft_eval_loss": hf_eval,
                                    "eval_rel_diff": rel(lt_eval, hf_eval)}
        print("8 LoRA steps:", json.dumps(results["lora_training"]), flush=True)
        if len(lt_losses) != steps or max(diffs) > 1e-4 or rel(lt_eval, hf_eval) > 1e-4:
            failures.append("8 LoRA steps: train losses differ by up to %.3g, eval %.8f vs %.8f"
                            % (max(diffs), lt_eval, hf_eval))
        if not hf_eval < hf_base - 1e-3:
            failures.append("LoRA training did not lower the eval loss (%.6f -> %.6f)" % (hf_base, hf_eval))
        del peft_train, base

        # 3. lora_train's adapter in PEFT on a 4-bit base.
        peft_model = PeftModel.from_pretrained(hf_4bit(args.model, q), adapter)
        hf_lora = hf_eval_loss(peft_model, hf_tok, eval_rows, 256)
        results["adapter_in_peft"] = {"lora_train": lt_eval, "peft_4bit": hf_lora, "rel_diff": rel(lt_eval, hf_lora)}
        print("lora_train's adapter in PEFT on the 4-bit base:", json.dumps(results["adapter_in_peft"]), flush=True)
        if rel(lt_eval, hf_lora) > 1e-5:
            failures.append("adapter in PEFT: eval loss %.8f, lora_train %.8f" % (hf_lora, lt_eval))
        del peft_model

    # 4. CPU time and memory.
    if not args.skip_speed:
        long_lengths = [len(example_ids(hf_tok, r, 256)[0]) for r in read_jsonl(os.path.join(work, "long.jsonl"))]
        n = args.speed_steps
        tokens = 4 * n * sum(long_lengths) / len(long_lengths)
        results["speed"] = cpu_and_rss(args.build, args.model, work, os.path.join(work, "long.jsonl"), ALL7, n,
                                       tokens, args.threads, q)
        results["speed_env"] = {"threads": args.threads, "batch": 4, "r": 8, "seq_len": 256, "targets": ALL7,
                                "torch": torch.__version__, "loadavg_end": os.getloadavg()}

    with open(os.path.join(work, "results-%s.json" % q), "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("real-model check in %s passed" % q)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--gguf", required=True)
    c.add_argument("--out", required=True)
    k = sub.add_parser("check")
    k.add_argument("--model", required=True)
    k.add_argument("--build", required=True)
    k.add_argument("--work", required=True)
    k.add_argument("--threads", type=int, default=2)
    k.add_argument("--skip-speed", action="store_true")
    k.add_argument("--speed-only", action="store_true")
    k.add_argument("--cpu-time", action="store_true")
    k.add_argument("--repeats", type=int, default=1)
    k.add_argument("--quantize", choices=["nf4", "fp4"], help="the 4-bit check (QLoRA) instead of the fp32 one")
    k.add_argument("--speed-steps", type=int, default=4,
                   help="with --quantize: the speed runs take N and 2N steps of 4 texts of 256 tokens")
    k.add_argument("--short-steps", type=int, default=16)
    k.add_argument("--short-skip", type=int, default=4)
    k.add_argument("--long-steps", type=int, default=6)
    k.add_argument("--long-skip", type=int, default=2)
    h = sub.add_parser("hf-train")
    h.add_argument("--model", required=True)
    h.add_argument("--data", required=True)
    h.add_argument("--targets", required=True)
    h.add_argument("--steps", type=int, required=True)
    h.add_argument("--skip", type=int, required=True)
    h.add_argument("--seq-len", type=int, default=256)
    h.add_argument("--threads", type=int, default=2)
    h.add_argument("--batch", type=int, default=4)
    h.add_argument("--r", type=int, default=8)
    h.add_argument("--quantize", choices=["nf4", "fp4"], help="load the base in 4 bits with bitsandbytes")
    args = ap.parse_args()
    if args.cmd == "convert":
        cmd_convert(args)
        return 0
    if args.cmd == "hf-train":
        cmd_hf_train(args)
        return 0
    if args.quantize:
        return cmd_check_quant(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
