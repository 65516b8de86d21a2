#!/usr/bin/env python3
"""Golden fixtures for lora_train's 4-bit quantization (trainer/quant_4bit.h), made with bitsandbytes.

Not needed in CI: the fixture it writes is committed. To remake it:

    PY=$(scripts/golden-venv.sh)                      # torch 2.9.1 (CPU is enough)
    "${PY%/python}/pip" install bitsandbytes==0.50.2  # its CPU backend
    $PY tests/trainer/golden/make_quant_golden.py

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
"""
import os

import torch
from safetensors.torch import save_file

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


if __name__ == "__main__":
    main()
