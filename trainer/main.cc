// lora_train: LoRA fine-tuning of Llama / Qwen2 models (trainer/README.md).
//
//   lora_train --base DIR --data FILE.jsonl [options]      fine-tune LoRA adapters
//   lora_train init --config config.json --tokenizer tokenizer.json --out DIR
//   lora_train pretrain --base DIR --corpus FILE [options]
//   lora_train logits --base DIR [--adapter DIR] --text TEXT --out FILE
//
// Rank 0 prints metric lines `step=N train_loss=... eval_loss=... lr=...
// tokens_per_s=...` on stdout; everything else goes to stderr.
#include <cstdlib>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "trainer/runtime_info.h"
#include "trainer/train_options.h"

namespace {

void AddLoopFlags(CLI::App* app, tune::LoopOptions* o) {
  app->add_option("--lr", o->lr, "peak learning rate");
  app->add_option("--weight-decay", o->weight_decay, "AdamW weight decay");
  app->add_option("--warmup-steps", o->warmup_steps, "linear warmup steps");
  app->add_option("--schedule", o->schedule, "cosine | linear | constant");
  app->add_option("--batch-size", o->batch_size, "sequences per rank per micro-batch");
  app->add_option("--grad-accum", o->grad_accum, "micro-batches per optimizer step");
  app->add_option("--seq-len", o->seq_len, "maximum tokens per sequence");
  app->add_option("--max-steps", o->max_steps, "optimizer steps");
  app->add_option("--eval-every", o->eval_every, "evaluate every N steps (0: at the end only)");
  app->add_option("--log-every", o->log_every, "print train_loss every N steps");
  app->add_option("--save-every", o->save_every, "checkpoint every N steps (0: at each evaluation)");
  app->add_option("--keep-checkpoints", o->keep_checkpoints, "checkpoints kept in the output folder");
  app->add_option("--clip", o->clip, "max gradient norm (0: no clipping)");
  app->add_option("--seed", o->seed, "seed for init, shuffling and dropout");
  app->add_option("--threads", o->threads, "intra-op threads (0: OMP_NUM_THREADS or all cores)");
  app->add_option("--eval-fraction", o->eval_fraction, "eval split when no eval file is given");
  app->add_option("--eval-max-examples", o->eval_max_examples, "cap on eval examples (0: all)");
  app->add_option("--resume-from", o->resume_from,
                  "checkpoint folder to continue from, with this command line's hyperparameters (\"\": none given; "
                  "then $TUNE_RESUME_FROM if set, else the newest checkpoint in --output)")
      ->expected(0, 1);  // a bare --resume-from, as `--resume-from ${resume_from}` in a shell line gives, is ""
  app->add_flag("!--no-auto-resume", o->auto_resume, "do not resume from a checkpoint found in --output");
  app->add_option("--output", o->output,
                  "output folder (default $TUNE_TRIAL_DIR, else ./output; pretrain: <out>/pretrain_checkpoints, "
                  "removed at the end)");
  app->add_option("--backend", o->backend, "distributed backend: auto (NCCL on a GPU, else Gloo) | gloo | nccl");
  app->add_option("--device", o->device,
                  "auto (a GPU when one is visible: LOCAL_RANK mod their count) | cpu | cuda | cuda:N");
  app->add_option("--dtype", o->dtype, "frozen base weights and forward pass: fp32 | bf16 (LoRA weights stay fp32)");
  app->add_flag("--gradient-checkpointing", o->gradient_checkpointing,
                "recompute each decoder layer's activations in the backward pass (less memory, ~1 more forward)");
  app->add_option("--dist-timeout", o->dist_timeout_s, "seconds before a silent rank fails the group");
  app->add_option("--metric-digits", o->metric_digits, "significant digits of printed losses (default 6)")
      ->check(CLI::Range(1, 17));
}

}  // namespace

int main(int argc, char** argv) {
  if (!tune::ConfigureAllocator()) std::cerr << "lora_train: glibc kept its default malloc thresholds\n";
  CLI::App app{"lora_train: LoRA fine-tuning of Llama/Qwen2 models (PEFT-compatible output)"};
  app.require_subcommand(0, 1);

  tune::FinetuneOptions ft;
  app.add_option("--base", ft.base, "Hugging Face model folder (config.json, safetensors, tokenizer.json)");
  app.add_option("--data", ft.data, "training JSONL");
  app.add_option("--eval-data", ft.eval_data, "evaluation JSONL (default: a split of --data)");
  app.add_option("--prompt-template", ft.prompt_template, "template with {instruction}, {input}, {response}");
  app.add_flag("--skip-malformed", ft.skip_malformed, "skip malformed JSONL lines instead of failing");
  app.add_option("--lora-r", ft.lora_r, "LoRA rank");
  app.add_option("--lora-alpha", ft.lora_alpha, "LoRA alpha");
  app.add_option("--lora-dropout", ft.lora_dropout, "dropout on the LoRA input");
  app.add_option("--target-modules", ft.target_modules, "comma list, e.g. q_proj,k_proj,v_proj,o_proj");
  app.add_flag("--use-rslora", ft.use_rslora, "scale by alpha/sqrt(r) instead of alpha/r");
  app.add_option("--quantize", ft.quantize, "hold the frozen base's decoder projections in 4 bits: nf4 | fp4 (QLoRA)");
  app.add_flag("--double-quant", ft.double_quant, "with --quantize: also quantize the block scales (8-bit)");
  AddLoopFlags(&app, &ft.loop);

  tune::InitOptions init;
  CLI::App* init_cmd = app.add_subcommand("init", "write a randomly initialised base model");
  init_cmd->add_option("--config", init.config, "config.json")->required();
  init_cmd->add_option("--tokenizer", init.tokenizer, "tokenizer file (any name; written as tokenizer.json)")
      ->required();
  init_cmd->add_option("--tokenizer-config", init.tokenizer_config,
                       "tokenizer_config.json to keep (default: the one next to --tokenizer, if any)");
  init_cmd->add_option("--out", init.out, "output folder")->required();
  init_cmd->add_option("--seed", init.seed, "initialisation seed");

  tune::PretrainOptions pt;
  pt.loop.lr = 1e-3;
  pt.loop.weight_decay = 0.01;
  pt.loop.seq_len = 128;
  pt.loop.max_steps = 300;
  pt.loop.eval_every = 100;
  pt.loop.clip = 1.0;
  pt.loop.eval_fraction = 0.02;
  CLI::App* pt_cmd = app.add_subcommand("pretrain", "full-parameter training of a small base on a text corpus");
  pt_cmd->add_option("--base", pt.base, "model folder (e.g. from init)")->required();
  pt_cmd->add_option("--corpus", pt.corpus, "plain-text corpus")->required();
  pt_cmd->add_option("--out", pt.out, "output folder (default: --base)");
  AddLoopFlags(pt_cmd, &pt.loop);

  tune::LogitsOptions lg;
  CLI::App* lg_cmd = app.add_subcommand("logits", "write logits for a text (checks against PEFT)");
  lg_cmd->add_option("--base", lg.base, "model folder")->required();
  lg_cmd->add_option("--adapter", lg.adapter, "adapter folder");
  lg_cmd->add_option("--text", lg.text, "input text")->required();
  lg_cmd->add_option("--out", lg.out, "output .safetensors")->required();
  lg_cmd->add_option("--quantize", lg.quantize, "nf4 | fp4: the base's decoder projections in 4 bits");
  lg_cmd->add_flag("--double-quant", lg.double_quant, "with --quantize: also quantize the block scales");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*init_cmd) return tune::RunInit(init);
  if (*pt_cmd) return tune::RunPretrain(pt);
  if (*lg_cmd) return tune::RunLogits(lg);
  if (ft.base.empty() || ft.data.empty()) {
    std::cerr << "lora_train: --base and --data are required (see --help)\n";
    return 2;
  }
  return tune::RunFinetune(ft);
}
