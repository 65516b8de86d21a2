#!/usr/bin/env python3
"""Golden fixtures for lora_train's 4-bit quantization (trainer/quant_4bit.h), made with bitsandbytes.

Not needed in CI: the fixture it writes is committed. To remake it:

    PY=$(scripts/golden-venv.sh)                      # torch 2.9.1 (CPU is enough)
    "${PY%/python}/pip" install bitsandbytes==0.50.2  # its CPU backend
    $PY tests/trainer/golden/make_quant_golden.py --lora-train build/bin/lora_train

Writes quant/quant_golden.safetensors:
  nf4_code, fp4_code [16]     bitsandbytes.functional.get_4bit_type(...)
  dynamic_map [256]           bitsandbytes.functional.create_dynamic_map()
  <case>/weight               a weight of a trained model's scale (std 0.02) with
                              outliers, zero blocks and values near 0, in its dtype
  <case>/<variant>/packed     U8, quantize_4bit(weight, blocksize=64, quant_type=...,
                              compress_statistics=...)'s packed codes, flattened
  <case>/<variant>/absmax     F32 (U8 with double quantization)
  <case>/<variant>/nested_absmax, offset   state2.absmax and offset (double quantization)
  <case>/<variant>/dequant    dequantize_4bit(packed, state), in the weight's dtype
  <case>/<variant>/dequant_f32  for a 16-bit weight, the same state dequantized to
                              float32 (state.dtype set to float32: code * scale unrounded)
with <variant> in nf4, fp4, nf4_dq, fp4_dq. Everything runs on the CPU.

and, for a tiny Llama (untied head) and a tiny Qwen2 (q/k/v biases, tied
embeddings), both with GQA and projections of a trained model's scale with
outliers, quant_<arch>/: the float32 model (save_pretrained), adapter_init/ (a
PEFT adapter, r=4 on every projection, random A and B) and golden.safetensors:
  input_ids [2, 12], labels (-100 on the first 4)
  logits/<variant>      transformers + BitsAndBytesConfig(load_in_4bit, quant_type,
                        use_double_quant, compute_dtype=float32) on the CPU
  lora_loss/<variant>, grad/<variant>/<peft key>: PEFT on that 4-bit model, one
                        forward + backward with adapter_init (dropout 0)
Linear4bit's CPU inference path (a repacked weight and another kernel, taken
with avx512_bf16 in eval mode without grad) is switched off, so the forward is
bitsandbytes' matmul_4bit: dequantize_4bit, then F.linear, as in training.

With --lora-train BIN (a built lora_train), it also writes
quant_llama/lora_train_nf4/: train.jsonl, the adapter that
`lora_train --quantize nf4 --double-quant` trains on quant_llama with
LORA_TRAIN_FLAGS (the tokenizer of golden/llama; the same flags as
tests/trainer/quant_model_test.cc), and peft_eval.safetensors: that adapter
loaded with PeftModel.from_pretrained onto quant_llama loaded by transformers
in NF4 with double quantization (float32 compute), evaluated on
golden.safetensors' input_ids and labels: logits and loss (eval mode, dropout
0). --lora-train-only skips everything else.
"""
import json
import os

import peft
import torch
from safetensors.torch import load_file, save_file

import bitsandbytes as bnb
import bitsandbytes.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = {"nf4": ("nf4", False), "fp4": ("fp4", False), "nf4_dq": ("nf4", True), "fp4_dq": ("fp4", True)}


def trained_like(shape, seed, dtype):
    """std 0.02 like a trained projection, a few large outliers, a block of zeros,
    a row of values around 1e-4 of the block scale (FP4's +0/-0 codes), per-row scales."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(shape, generator=g) * 0.02
    w *= torch.exp(torch.randn(shape[0], 1, generator=g) * 0.5)  # rows of different scale
    flat = w.view(-1)
    idx = torch.randint(0, flat.numel(), (max(1, flat.numel() // 500),), generator=g)
    flat[idx] = torch.randn(idx.numel(), generator=g) * 0.5  # outliers, 25x the std
    if flat.numel() >= 256:
        flat[64:128] = 0.0  # an all-zero block
        flat[128:192] *= 1e-4  # tiny values; one element keeps the block's scale
        flat[128] = 0.03
    return w.to(dtype)


CASES = {
    "f32_32x128": ((32, 128), torch.float32),
    "f32_264x64": ((264, 64), torch.float32),  # 264 blocks: a partial 256-block of absmax
    "bf16_64x128": ((64, 128), torch.bfloat16),
    "f16_64x64": ((64, 64), torch.float16),
    "f32_5x13": ((5, 13), torch.float32),  # 65 values: a partial block and an odd count
}


def main():
    out = {
        "nf4_code": F.get_4bit_type("nf4", device="cpu").contiguous(),
        "fp4_code": F.get_4bit_type("fp4", device="cpu").contiguous(),
        "dynamic_map": F.create_dynamic_map().contiguous(),
    }
    for i, (name, (shape, dtype)) in enumerate(CASES.items()):
        w = trained_like(shape, 1000 + i, dtype)
        out[f"{name}/weight"] = w.contiguous()
        for variant, (qtype, dq) in VARIANTS.items():
            packed, state = F.quantize_4bit(w, blocksize=64, compress_statistics=dq, quant_type=qtype)
            key = f"{name}/{variant}"
            out[f"{key}/packed"] = packed.reshape(-1).contiguous()
            out[f"{key}/absmax"] = state.absmax.contiguous()
            if dq:
                out[f"{key}/nested_absmax"] = state.state2.absmax.contiguous()
                out[f"{key}/offset"] = state.offset.reshape(()).contiguous()
            out[f"{key}/dequant"] = F.dequantize_4bit(packed, state).contiguous()
            if dtype != torch.float32:
                state.dtype = torch.float32
                out[f"{key}/dequant_f32"] = F.dequantize_4bit(packed, state).contiguous()
    os.makedirs(os.path.join(HERE, "quant"), exist_ok=True)
    path = os.path.join(HERE, "quant", "quant_golden.safetensors")
    save_file(out, path, metadata={"bitsandbytes": bnb.__version__, "torch": torch.__version__})
    print(f"wrote {path}: {len(out)} tensors (bitsandbytes {bnb.__version__}, torch {torch.__version__})")


def trained_like_model(model, gen):
    """Norms 1 + noise, embeddings std 0.05, projections trained_like (scaled to std 0.05)."""
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if "norm" in name:
                p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.05)
            elif name.endswith("_proj.weight"):
                p.copy_(trained_like(tuple(p.shape), 2000 + i, torch.float32) * 2.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)


def make_model(arch, seed):
    import shutil
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, LlamaConfig, Qwen2Config
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from peft.utils import get_peft_model_state_dict
    out = os.path.join(HERE, "quant_" + arch)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    common = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  bos_token_id=None, eos_token_id=256, rms_norm_eps=1e-6)
    if arch == "llama":
        config = LlamaConfig(tie_word_embeddings=False, **common)
    else:
        config = Qwen2Config(tie_word_embeddings=True, use_sliding_window=False, **common)
    gen = torch.Generator().manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    trained_like_model(model, gen)
    model.save_pretrained(out, safe_serialization=True)
    if os.path.exists(os.path.join(out, "generation_config.json")):
        os.remove(os.path.join(out, "generation_config.json"))
    ids = torch.randint(0, 300, (2, 12), generator=gen)
    labels = ids.clone()
    labels[:, :4] = -100
    tensors = {"input_ids": ids, "labels": labels}
    with torch.no_grad():
        tensors["logits/float"] = model(ids).logits.contiguous()
    adapter = None
    for variant, (qtype, dq) in VARIANTS.items():
        bnb_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=qtype, bnb_4bit_use_double_quant=dq,
                                        bnb_4bit_compute_dtype=torch.float32)
        q = AutoModelForCausalLM.from_pretrained(out, quantization_config=bnb_config, dtype=torch.float32,
                                                 device_map="cpu", attn_implementation="eager")
        for m in q.modules():
            if isinstance(m, bnb.nn.Linear4bit):
                m.support_avx512bf16_for_cpu = False
        q.eval()
        with torch.no_grad():
            tensors[f"logits/{variant}"] = q(ids).logits.contiguous()
        lcfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS, task_type="CAUSAL_LM")
        peft_model = get_peft_model(q, lcfg)
        if adapter is None:
            with torch.no_grad():
                for name, p in peft_model.named_parameters():
                    if "lora_" in name:
                        p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            peft_model.save_pretrained(os.path.join(out, "adapter_init"))
            os.remove(os.path.join(out, "adapter_init", "README.md"))
            adapter = get_peft_model_state_dict(peft_model)
        else:
            set_peft_model_state_dict(peft_model, adapter)
        peft_model.train()
        res = peft_model(input_ids=ids, labels=labels)
        res.loss.backward()
        tensors[f"lora_loss/{variant}"] = res.loss.detach().reshape(1)
        for n, p in peft_model.named_parameters():
            if p.requires_grad:
                tensors[f"grad/{variant}/" + n.replace(".default", "")] = p.grad.detach().clone()
        print(f"quant_{arch} {variant}: lora_loss {res.loss.item():.6f}")
    save_file(tensors, os.path.join(out, "golden.safetensors"))


TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# lora_train's flags for the adapter in quant_llama/lora_train_nf4 (the test
# adds --base, --data and --output).
LORA_TRAIN_FLAGS = ("--quantize nf4 --double-quant --seq-len 48 --threads 1 --lora-r 4 --lora-alpha 8 "
                    "--lora-dropout 0 --target-modules q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj "
                    "--max-steps 8 --batch-size 4 --lr 1e-2 --eval-every 0 --seed 1 --no-auto-resume").split()


def train_jsonl(path):
    words = ["alpha beta gamma", "the quick brown fox", "hello world again", "one two three four"]
    with open(path, "w") as f:
        for i in range(24):
            f.write(json.dumps({"instruction": "Repeat item %d." % (i % 4), "response": words[i % 4]}) + "\n")


def lora_train_adapter(lora_train):
    """PEFT's eval loss of an adapter lora_train trained in NF4 (see the docstring)."""
    import shutil
    import subprocess
    import tempfile
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    from peft import PeftModel
    src = os.path.join(HERE, "quant_llama")
    out = os.path.join(src, "lora_train_nf4")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    train_jsonl(os.path.join(out, "train.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        os.makedirs(base)
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(src, f), base)
        shutil.copy(os.path.join(HERE, "llama", "tokenizer.json"), base)
        run = os.path.join(tmp, "run")
        subprocess.run([lora_train, "--base", base, "--data", os.path.join(out, "train.jsonl"), "--output", run]
                       + LORA_TRAIN_FLAGS, check=True)
        shutil.copy(os.path.join(run, "adapter_model.safetensors"), out)
        with open(os.path.join(run, "adapter_config.json")) as f:
            cfg = json.load(f)
    cfg["base_model_name_or_path"] = "quant_llama"  # not the temporary folder's path
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    golden = load_file(os.path.join(src, "golden.safetensors"))
    bnb_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                    bnb_4bit_compute_dtype=torch.float32)
    q = AutoModelForCausalLM.from_pretrained(src, quantization_config=bnb_config, dtype=torch.float32,
                                             device_map="cpu", attn_implementation="eager")
    for m in q.modules():
        if isinstance(m, bnb.nn.Linear4bit):
            m.support_avx512bf16_for_cpu = False
    peft_model = PeftModel.from_pretrained(q, out)
    peft_model.eval()
    with torch.no_grad():
        res = peft_model(input_ids=golden["input_ids"], labels=golden["labels"])
    tensors = {"input_ids": golden["input_ids"], "labels": golden["labels"], "logits": res.logits.contiguous(),
               "loss": res.loss.reshape(1).contiguous()}
    save_file(tensors, os.path.join(out, "peft_eval.safetensors"),
              metadata={"bitsandbytes": bnb.__version__, "peft": peft.__version__, "torch": torch.__version__})
    print(f"quant_llama/lora_train_nf4: PEFT eval loss {res.loss.item():.8f} of lora_train's adapter")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--lora-train", help="a built lora_train: also write quant_llama/lora_train_nf4")
    ap.add_argument("--lora-train-only", action="store_true", help="only quant_llama/lora_train_nf4")
    args = ap.parse_args()
    if not args.lora_train:
        ap.error("--lora-train BIN is needed: quant_llama/ is written anew, lora_train_nf4/ with it")
    if not args.lora_train_only:
        main()
        make_model("llama", 51)
        make_model("qwen2", 52)
    if args.lora_train:
        lora_train_adapter(os.path.abspath(args.lora_train))
