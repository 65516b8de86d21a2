#!/usr/bin/env python3
"""Golden fixtures for the lora_train tests, made with Hugging Face transformers + PEFT.

Not needed in CI: the fixtures it writes are committed. To remake them:

    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install "transformers==4.40.2" "peft==0.10.0"
    VENV/bin/python tests/trainer/golden/make_golden.py            # writes the fixtures
    VENV/bin/python tests/trainer/golden/make_golden.py --check-peft BUILD/bin/lora_train

Fixtures (all small, float32):
  <arch>/            a tiny random model saved with save_pretrained (config.json,
                     safetensors; qwen2 sharded with model.safetensors.index.json)
                     plus a byte-level BPE tokenizer.json trained here
  <arch>/adapter_init/  a PEFT adapter (r=4, every projection) with random A and B
  <arch>/golden.safetensors:
     input_ids [2, 12] (I64), labels [2, 12] (I64, -100 on the prompt part)
     logits              base model logits for input_ids            [2, 12, V]
     lora_logits         logits with the adapter_init adapter
     lora_loss           [1] causal-LM loss with labels (adapter on, no dropout)
     grad/<peft key>     d lora_loss / d adapter tensor
     step/<peft key>     the adapter after one AdamW step (lr 1e-2, wd 0.01)
  dtypes.safetensors  the same values as F32, F16 and BF16 (reader test)

--check-peft BIN: trains an adapter with `BIN` on the llama fixture, loads it
with PEFT and compares PEFT's logits with `BIN logits` (max abs difference).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import save_file, load_file

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
CORPUS = """The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
A journey of a thousand miles begins with a single step. 1234567890 numbers, numbers!
Hello world; hello tokenizer: the merges learn common pairs like th, he, in, er and an.
"""


def make_tokenizer(path):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([CORPUS] * 4, trainer=trainer)
    tok.save(path)
    return tok.get_vocab_size()


def config_for(arch):
    from transformers import LlamaConfig, Qwen2Config
    common = dict(vocab_size=320, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  bos_token_id=None, eos_token_id=256, attn_implementation="eager")
    if arch == "llama":
        return LlamaConfig(rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False, **common)
    return Qwen2Config(rms_norm_eps=1e-5, rope_theta=1000000.0, tie_word_embeddings=True,
                       use_sliding_window=False, **common)


def randomize(module, gen, std):
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * std
            p.copy_(1.0 + noise if "norm" in name else noise)


def make_arch(arch):
    from transformers import AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model, PeftModel
    out = os.path.join(HERE, arch)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    gen = torch.Generator().manual_seed(1234 if arch == "llama" else 4321)
    model = AutoModelForCausalLM.from_config(config_for(arch), attn_implementation="eager")
    randomize(model, gen, 0.08)
    model.eval()
    shard = "60KB" if arch == "qwen2" else "10GB"
    model.save_pretrained(out, safe_serialization=True, max_shard_size=shard)
    make_tokenizer(os.path.join(out, "tokenizer.json"))
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(out, extra)):
            os.remove(os.path.join(out, extra))

    ids = torch.randint(0, 300, (2, 12), generator=gen)
    labels = ids.clone()
    labels[:, :4] = -100
    with torch.no_grad():
        logits = model(ids).logits

    lcfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, lcfg)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    peft_model.save_pretrained(os.path.join(out, "adapter_init"))
    os.remove(os.path.join(out, "adapter_init", "README.md"))
    peft_model.train()  # dropout is 0, so train mode changes nothing but is what a step uses
    out_l = peft_model(input_ids=ids, labels=labels)
    out_l.loss.backward()
    params = {n: p for n, p in peft_model.named_parameters() if p.requires_grad}
    tensors = {"input_ids": ids, "labels": labels, "logits": logits.contiguous(),
               "lora_logits": out_l.logits.detach().contiguous(),
               "lora_loss": out_l.loss.detach().reshape(1)}

    def peft_key(n):  # base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight
        return n.replace(".default", "")

    for n, p in params.items():
        tensors["grad/" + peft_key(n)] = p.grad.detach().clone()
    opt = torch.optim.AdamW(list(params.values()), lr=1e-2, weight_decay=0.01)
    opt.step()
    for n, p in params.items():
        tensors["step/" + peft_key(n)] = p.detach().clone()
    save_file(tensors, os.path.join(out, "golden.safetensors"))
    print(f"{arch}: lora_loss {out_l.loss.item():.6f}, {len(params)} adapter tensors")


def make_dtypes():
    gen = torch.Generator().manual_seed(7)
    x = (torch.randn(3, 5, generator=gen) * 4).to(torch.float32)
    save_file({"f32": x, "f16": x.to(torch.float16), "bf16": x.to(torch.bfloat16),
               "f16_as_f32": x.to(torch.float16).to(torch.float32),
               "bf16_as_f32": x.to(torch.bfloat16).to(torch.float32),
               "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3)},
              os.path.join(HERE, "dtypes.safetensors"), metadata={"format": "pt"})


def check_peft(binary):
    """Train with lora_train, load with PEFT, compare logits with lora_train's."""
    from transformers import AutoModelForCausalLM
    from peft import PeftModel
    base = os.path.join(HERE, "llama")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.jsonl")
        with open(data, "w") as f:
            for line in CORPUS.splitlines():
                f.write(json.dumps({"instruction": "Repeat.", "response": line}) + "\n")
        out = os.path.join(tmp, "out")
        subprocess.run([binary, "--base", base, "--data", data, "--output", out, "--max-steps", "4",
                        "--lr", "5e-2", "--lora-r", "4", "--lora-alpha", "8", "--lora-dropout", "0.1",
                        "--target-modules", "q_proj,v_proj,down_proj", "--batch-size", "2", "--seq-len", "96",
                        "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
        ours = os.path.join(tmp, "ours.safetensors")
        subprocess.run([binary, "logits", "--base", base, "--adapter", out, "--text", CORPUS[:60],
                        "--out", ours], check=True, stdout=subprocess.DEVNULL)
        got = load_file(ours)
        model = AutoModelForCausalLM.from_pretrained(base, attn_implementation="eager")
        peft_model = PeftModel.from_pretrained(model, out)
        peft_model.eval()
        with torch.no_grad():
            ref = peft_model(input_ids=got["input_ids"]).logits
            base_logits = model.get_base_model()(input_ids=got["input_ids"]).logits if hasattr(model, "get_base_model") else None
        diff = (ref - got["logits"]).abs().max().item()
        scale = ref.abs().max().item()
        moved = (ref - got["base_logits"]).abs().max().item()
        print(f"PEFT check: PEFT loaded the adapter written by lora_train; max |PEFT - lora_train| logits = "
              f"{diff:.3e} (logit scale {scale:.3f}; the adapter moves logits by up to {moved:.3e})")
        return diff <= 1e-4 * max(1.0, scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-peft", metavar="LORA_TRAIN", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check_peft:
        sys.exit(0 if check_peft(args.check_peft) else 1)
    for arch in ("llama", "qwen2"):
        make_arch(arch)
    make_dtypes()


if __name__ == "__main__":
    main()
