#!/usr/bin/env python3
"""Golden fixtures for the lora_train tests, made with Hugging Face transformers + PEFT.

Not needed in CI: the fixtures it writes are committed. To remake them:

    PY=$(scripts/golden-venv.sh)     # torch 2.9.1, transformers 5.23.0, peft 0.21.2
    $PY tests/trainer/golden/make_golden.py            # the transformers 5 fixtures (CASES)
    $PY tests/trainer/golden/make_golden.py --check-peft BUILD/bin/lora_train

`llama/` and `qwen2/` are the transformers 4.x fixtures (config.json with a
top-level rope_theta), made by this script's `--legacy` mode with
transformers 4.40.2 + peft 0.10.0; they stay as they are so that both config
formats are tested.

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
  <case>/            one per entry of CASES (transformers 5 format: rope_parameters,
                     dtype, layer_types): smaller models (hidden 32, tied embeddings
                     unless stated), the same golden.safetensors layout
  full_configs_<v>.json  every key of the llama, mistral, qwen2 and qwen3 config
                     classes with their defaults, as transformers <v> writes them
                     (5.23.0 with the fixtures; 4.57.1 with --full-configs under 4.57.1)
  rope_tables.json   RoPE inv_freq, attention scaling and the cos/sin of the last
                     position from transformers' rotary embedding, for the configs
                     in ROPE_TABLES; dynamic ones as a sequence of forward lengths

--check-peft BIN: trains an adapter with `BIN` on the llama and qwen3 fixtures,
loads it with PEFT and compares PEFT's logits with `BIN logits` (max abs
difference); then has `BIN init` write a Qwen3 base (yarn, sliding window) and
checks that transformers reads its config.json as the same model.
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


# Cases made with transformers 5: (model_type, config overrides, seed, tokenizer?).
# Sequences are 12 tokens: windows of 5 slide; dynamic RoPE's max_position_embeddings
# of 8 is exceeded; llama3/yarn's original length of 16 makes their scaling act on
# most frequencies of a head_dim of 8.
SMALL = dict(vocab_size=320, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             bos_token_id=None, eos_token_id=256, tie_word_embeddings=True, rms_norm_eps=1e-6)
CASES = {
    # 5.x format with a non-default base: lora_train once read 10000 here.
    "llama_v5": ("llama", dict(rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                               tie_word_embeddings=False), 11, False),
    "llama_bias": ("llama", dict(mlp_bias=True, attention_bias=True), 12, False),
    "llama_linear": ("llama", dict(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                    "rope_theta": 10000.0}), 13, False),
    "llama_dynamic": ("llama", dict(max_position_embeddings=8,
                                    rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                     "rope_theta": 10000.0}), 14, False),
    "llama3_rope": ("llama", dict(rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16,
                                                   "rope_theta": 10000.0}), 15, False),
    "qwen2_yarn": ("qwen2", dict(rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                  "original_max_position_embeddings": 16,
                                                  "rope_theta": 10000.0}), 16, False),
    "qwen2_sliding": ("qwen2", dict(use_sliding_window=True, sliding_window=5, max_window_layers=1,
                                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), 17, False),
    "mistral_sliding": ("mistral", dict(sliding_window=5, head_dim=16,
                                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), 18, False),
    "qwen3": ("qwen3", dict(head_dim=16, attention_bias=False, tie_word_embeddings=False,
                            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}), 19, True),
}

# RoPE configs whose tables rope_tables.json holds: (name, config fields, forward lengths).
ROPE_TABLES = [
    ("default", dict(head_dim=64, max_position_embeddings=4096,
                     rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}), [40]),
    ("linear", dict(head_dim=64, max_position_embeddings=4096,
                    rope_parameters={"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}), [40]),
    # growth (20 > 16), no shrink above the original length (17), another growth (24),
    # reset below it (10), growth again (30)
    ("dynamic", dict(head_dim=64, max_position_embeddings=16,
                     rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}),
     [8, 20, 17, 24, 10, 30]),
    ("llama3.1", dict(head_dim=128, max_position_embeddings=131072,
                      rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
                                       "rope_theta": 500000.0}), [40]),
    ("llama3.2", dict(head_dim=64, max_position_embeddings=131072,
                      rope_parameters={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
                                       "rope_theta": 500000.0}), [40]),
    ("yarn_qwen", dict(head_dim=128, max_position_embeddings=131072,
                       rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                                        "rope_theta": 1000000.0}), [40]),
    ("yarn_no_truncate", dict(head_dim=64, max_position_embeddings=8192,
                              rope_parameters={"rope_type": "yarn", "factor": 4.0, "truncate": False,
                                               "original_max_position_embeddings": 2048, "beta_fast": 16,
                                               "beta_slow": 2, "rope_theta": 10000.0}), [40]),
    ("yarn_mscale", dict(head_dim=64, max_position_embeddings=163840,
                         rope_parameters={"rope_type": "yarn", "factor": 40.0, "mscale": 0.707,
                                          "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                          "rope_theta": 10000.0}), [40]),
    ("yarn_attention_factor", dict(head_dim=64, max_position_embeddings=8192,
                                   rope_parameters={"rope_type": "yarn", "factor": 2.0, "attention_factor": 1.25,
                                                    "original_max_position_embeddings": 4096,
                                                    "rope_theta": 10000.0}), [40]),
]


def config_v5(model_type, overrides):
    from transformers import LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config
    cls = {"llama": LlamaConfig, "mistral": MistralConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[model_type]
    kw = dict(SMALL)
    kw.update(overrides)
    return cls(**kw)


def randomize(module, gen, std):
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * std
            p.copy_(1.0 + noise if "norm" in name else noise)


def make_arch(arch, config=None, seed=None, tokenizer=True):
    from transformers import AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model, PeftModel
    out = os.path.join(HERE, arch)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if seed is None:
        seed = 1234 if arch == "llama" else 4321
    gen = torch.Generator().manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config or config_for(arch), attn_implementation="eager")
    randomize(model, gen, 0.08)
    model.eval()
    shard = "60KB" if arch == "qwen2" else "10GB"
    model.save_pretrained(out, safe_serialization=True, max_shard_size=shard)
    if tokenizer:
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


def make_rope_tables():
    """inv_freq, attention scaling and the last row of cos/sin, per forward length."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    tables = []
    for name, fields, lengths in ROPE_TABLES:
        kw = dict(vocab_size=16, hidden_size=fields["head_dim"] * 2, intermediate_size=8, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2)
        kw.update(fields)
        config = LlamaConfig(**kw)
        rotary = LlamaRotaryEmbedding(config)
        calls = []
        for n in lengths:
            x = torch.zeros(1, n, 1)
            cos, sin = rotary(x, torch.arange(n)[None])
            calls.append({"seq_len": n, "inv_freq": rotary.inv_freq.tolist(),
                          "attention_scaling": float(rotary.attention_scaling),
                          "cos_last": cos[0, -1].tolist(), "sin_last": sin[0, -1].tolist()})
        cfg = json.loads(config.to_json_string())
        tables.append({"name": name, "config": cfg, "calls": calls})
    with open(os.path.join(HERE, "rope_tables.json"), "w") as f:
        json.dump(tables, f, indent=None)
        f.write("\n")
    print(f"rope_tables.json: {len(tables)} configs")


def write_full_configs(path):
    """Every key of each supported config class with transformers' defaults
    (to_dict without the diff), for the installed transformers version."""
    import transformers
    from transformers import LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config
    out = {"transformers_version": transformers.__version__, "configs": []}
    for cls in (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config):
        out["configs"].append(json.loads(cls().to_json_string(use_diff=False)))
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{path}: {len(out['configs'])} configs from transformers {transformers.__version__}")


def make_dtypes():
    gen = torch.Generator().manual_seed(7)
    x = (torch.randn(3, 5, generator=gen) * 4).to(torch.float32)
    save_file({"f32": x, "f16": x.to(torch.float16), "bf16": x.to(torch.bfloat16),
               "f16_as_f32": x.to(torch.float16).to(torch.float32),
               "bf16_as_f32": x.to(torch.bfloat16).to(torch.float32),
               "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3)},
              os.path.join(HERE, "dtypes.safetensors"), metadata={"format": "pt"})


def check_peft(binary, arch="llama"):
    """Train with lora_train, load with PEFT, compare logits with lora_train's."""
    from transformers import AutoModelForCausalLM
    from peft import PeftModel
    base = os.path.join(HERE, arch)
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
        print(f"PEFT check ({arch}): PEFT loaded the adapter written by lora_train; max |PEFT - lora_train| logits = "
              f"{diff:.3e} (logit scale {scale:.3f}; the adapter moves logits by up to {moved:.3e})")
        return diff <= 1e-4 * max(1.0, scale)


def check_config_roundtrip(binary):
    """`BIN init` writes a Qwen3 base with yarn RoPE and a sliding window; transformers
    must read its config.json as the same model (logits against `BIN logits`)."""
    from transformers import AutoModelForCausalLM
    cfg = {"model_type": "qwen3", "vocab_size": 0, "hidden_size": 32, "intermediate_size": 48,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1, "max_position_embeddings": 64,
           "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                               "rope_theta": 10000.0}}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        base = os.path.join(tmp, "m")
        subprocess.run([binary, "init", "--config", os.path.join(tmp, "cfg.json"), "--tokenizer",
                        os.path.join(HERE, "llama", "tokenizer.json"), "--out", base], check=True,
                       stderr=subprocess.DEVNULL)
        ours = os.path.join(tmp, "ours.safetensors")
        subprocess.run([binary, "logits", "--base", base, "--text", CORPUS[:60], "--out", ours], check=True)
        got = load_file(ours)
        model = AutoModelForCausalLM.from_pretrained(base, attn_implementation="eager")
        with torch.no_grad():
            ref = model(input_ids=got["input_ids"]).logits
        diff = (ref - got["logits"]).abs().max().item()
        scale = ref.abs().max().item()
        print(f"config round trip (qwen3, yarn, window 3, {got['input_ids'].shape[1]} tokens): transformers "
              f"{__import__('transformers').__version__} read lora_train's config.json; max |transformers - "
              f"lora_train| logits = {diff:.3e} (logit scale {scale:.3f})")
        return diff <= 1e-4 * max(1.0, scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-peft", metavar="LORA_TRAIN", default="")
    ap.add_argument("--full-configs", action="store_true",
                    help="only write full_configs_<transformers version>.json (run it under 4.x and 5.x)")
    ap.add_argument("--legacy", action="store_true",
                    help="remake the transformers 4.x fixtures llama/, qwen2/ and dtypes (needs transformers 4.40.2)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check_peft:
        ok = [check_peft(args.check_peft, arch) for arch in ("llama", "qwen3")]
        ok.append(check_config_roundtrip(args.check_peft))
        sys.exit(0 if all(ok) else 1)
    if args.full_configs:
        import transformers
        write_full_configs(os.path.join(HERE, f"full_configs_{transformers.__version__}.json"))
        return
    if args.legacy:
        for arch in ("llama", "qwen2"):
            make_arch(arch)
        make_dtypes()
        return
    import transformers
    import peft
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}")
    for name, (model_type, overrides, seed, tokenizer) in CASES.items():
        make_arch(name, config_v5(model_type, overrides), seed, tokenizer)
    make_rope_tables()
    write_full_configs(os.path.join(HERE, f"full_configs_{transformers.__version__}.json"))


if __name__ == "__main__":
    main()
