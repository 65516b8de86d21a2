"""LoRA fine-tuning of the demo's tiny base with Hugging Face Trainer + PEFT,
as a `tune` trial: parameters from tune_trial.params(), metrics, stopping,
checkpoints and PBT's new hyperparameters through tune_trial.hf.TuneCallback.

Runs on the CPU in seconds (the demo base: 2 layers, hidden 128). The
experiments hf-trainer-asha.json and hf-trainer-pbt.json run it with the
Python of scripts/hf-venv.sh and python/ on PYTHONPATH; by hand:

    PYTHONPATH=python $(scripts/hf-venv.sh) experiments/hf_trainer/train.py \
        --base models/tiny --data data/train.jsonl --eval-data data/eval.jsonl

Outside a trial it trains with the defaults below into the current folder.
The prompt is the trainer's default Alpaca-style template
(docs/trainer-data.md); only the response and the end-of-text token carry
loss.
"""

import argparse
import json
import os
import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, PreTrainedTokenizerFast, Trainer, TrainerCallback,
                          TrainingArguments)

import tune_trial
from tune_trial.hf import TuneCallback

DEFAULTS = {
    "learning_rate": 3e-3,
    "lora_r": 8,
    "lora_alpha": 16,
    "lora_dropout": 0.05,
    "warmup_steps": 5,
    "weight_decay": 0.0,
}
PROMPT = "### Instruction:\n{instruction}\n\n### Response:\n"


def load_examples(path, tokenizer, seq_len, limit):
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if limit and len(out) >= limit:
                break
            ex = json.loads(line)
            prompt = tokenizer.encode(PROMPT.format(instruction=ex["instruction"]), add_special_tokens=False)
            response = tokenizer.encode(ex.get("response", ex.get("output", "")), add_special_tokens=False) + [eos]
            ids = (prompt + response)[:seq_len]
            labels = ([-100] * len(prompt) + response)[:seq_len]
            if any(label != -100 for label in labels):
                out.append({"input_ids": ids, "labels": labels})
    return out, eos


class Collator:
    """Pads a batch to its longest example (pad = end-of-text, no loss)."""

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, batch):
        n = max(len(b["input_ids"]) for b in batch)
        ids = [b["input_ids"] + [self.pad_id] * (n - len(b["input_ids"])) for b in batch]
        labels = [b["labels"] + [-100] * (n - len(b["labels"])) for b in batch]
        mask = [[1] * len(b["input_ids"]) + [0] * (n - len(b["input_ids"])) for b in batch]
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "attention_mask": torch.tensor(mask)}


class OptimizerLrCallback(TrainerCallback):
    """Reports `optimizer_lr`: param_groups[0]['lr'] as the optimizer's step
    read it (on_optimizer_step comes after optimizer.step() and before the
    scheduler's step), at the step it trained, through the TuneCallback (so
    that it follows the step's checkpoint). What the PBT test checks."""

    def __init__(self, tune_callback):
        self.tune = tune_callback
        self.lr = None

    def on_optimizer_step(self, args, state, control, optimizer=None, **kwargs):
        self.lr = optimizer.param_groups[0]["lr"]

    def on_step_end(self, args, state, control, **kwargs):
        if self.lr is not None:
            self.tune.report(state, control, optimizer_lr=self.lr)
            self.lr = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="models/tiny")
    ap.add_argument("--data", default="data/train.jsonl")
    ap.add_argument("--eval-data", default="data/eval.jsonl")
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--save-every", type=int, default=10)
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--train-max-examples", type=int, default=2000)
    ap.add_argument("--eval-max-examples", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--report-optimizer-lr", action="store_true",
                    help="report the learning rate the optimizer used at every step (optimizer_lr)")
    a = ap.parse_args()

    # SIGTERM only sets a flag from here on (also while the model loads).
    tune_trial.install_signal_handler()
    p = tune_trial.params(DEFAULTS)
    torch.set_num_threads(a.threads)

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=os.path.join(a.base, "tokenizer.json"))
    train, eos = load_examples(a.data, tokenizer, a.seq_len, a.train_max_examples)
    evals, _ = load_examples(a.eval_data, tokenizer, a.seq_len, a.eval_max_examples)

    model = AutoModelForCausalLM.from_pretrained(a.base, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(
        r=int(p["lora_r"]), lora_alpha=float(p["lora_alpha"]), lora_dropout=float(p["lora_dropout"]),
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        task_type="CAUSAL_LM"))

    args = TrainingArguments(
        output_dir=tune_trial.trial_dir(),  # checkpoint-<step> folders where tune looks
        max_steps=a.max_steps,
        per_device_train_batch_size=a.batch_size,
        per_device_eval_batch_size=32,
        learning_rate=float(p["learning_rate"]),
        warmup_steps=int(p["warmup_steps"]),
        weight_decay=float(p["weight_decay"]),
        lr_scheduler_type="linear",
        eval_strategy="steps", eval_steps=a.eval_every,
        save_strategy="steps", save_steps=a.save_every, save_total_limit=2,
        logging_strategy="steps", logging_steps=a.log_every,
        seed=a.seed, data_seed=a.seed,
        use_cpu=True, dataloader_num_workers=0, report_to="none", disable_tqdm=True,
    )
    tune_callback = TuneCallback()
    callbacks = [tune_callback]
    if a.report_optimizer_lr:
        callbacks.append(OptimizerLrCallback(tune_callback))
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evals,
                      data_collator=Collator(eos), callbacks=callbacks)
    start = tune_trial.resume_from()
    trainer.train(resume_from_checkpoint=start)
    # Pruned, paused or stopped: leave within the grace, nothing more counts.
    sys.exit(0)


if __name__ == "__main__":
    main()
