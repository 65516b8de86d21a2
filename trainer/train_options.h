// The lora_train subcommands and their options (trainer/README.md). Torch-free:
// main.cc parses flags into these structs; the Run* functions (libtorch,
// in lora_core) do the work and return the process exit code (0 success,
// 1 failure, 2 invalid input), printing one readable error on stderr.
#pragma once

#include <cstdint>
#include <string>

namespace tune {

// Optimisation and loop settings shared by fine-tuning and pretraining.
struct LoopOptions {
  double lr = 2e-4;
  double weight_decay = 0.0;
  int64_t warmup_steps = 0;
  std::string schedule = "cosine";  // cosine | linear | constant
  int64_t batch_size = 8;           // sequences per rank per micro-batch
  int64_t grad_accum = 1;
  int64_t seq_len = 256;
  int64_t max_steps = 100;
  int64_t eval_every = 50;          // 0: only at the end
  int64_t log_every = 10;           // train_loss lines between evals
  int64_t save_every = 0;           // checkpoint period in steps; 0: at each eval
  int64_t keep_checkpoints = 2;
  double clip = 1.0;                // max gradient norm; 0 disables
  uint64_t seed = 42;
  int threads = 0;                  // 0: OMP_NUM_THREADS, else all cores
  double eval_fraction = 0.1;       // eval split when no eval file is given
  int64_t eval_max_examples = 512;  // cap on the eval set (0: all)
  std::string resume_from;          // a checkpoint-N directory; "": $TUNE_RESUME_FROM, else auto-resume
  bool auto_resume = true;          // resume from the newest checkpoint in output
  std::string output;               // default $TUNE_TRIAL_DIR, else ./output
  std::string backend = "auto";     // distributed: auto | gloo | nccl (trainer/device.h)
  std::string device = "auto";      // auto | cpu | cuda | cuda:N
  std::string dtype = "fp32";       // frozen base + forward: fp32 | bf16 (fp16 refused)
  bool gradient_checkpointing = false;  // recompute layer activations in backward
  int dist_timeout_s = 120;         // a rank that stops answering fails the group
  int metric_digits = 6;            // significant digits of the printed losses
};

struct FinetuneOptions {
  std::string base;
  std::string data;
  std::string eval_data;
  std::string prompt_template;  // empty: the data loader's default
  bool skip_malformed = false;
  int64_t lora_r = 8;
  double lora_alpha = 16.0;
  double lora_dropout = 0.05;
  std::string target_modules = "q_proj,v_proj";
  bool use_rslora = false;
  std::string quantize;       // "" | none | nf4 | fp4: the frozen base in 4 bits (QLoRA)
  bool double_quant = false;  // also quantize the 4-bit block scales
  LoopOptions loop;
};

struct PretrainOptions {
  std::string base;    // a folder made by `lora_train init` (or any model folder)
  std::string corpus;  // plain text, documents separated by blank lines
  std::string out;     // default: overwrite `base`
  LoopOptions loop;
};

struct InitOptions {
  std::string config;     // config.json (llama or qwen2)
  std::string tokenizer;         // any name; written to out/tokenizer.json
  std::string tokenizer_config;  // optional; written to out/tokenizer_config.json
  std::string out;
  uint64_t seed = 0;
};

// Writes input_ids, base_logits and logits (with the adapter, if any) for
// `text` to a safetensors file: used to check PEFT against lora_train.
struct LogitsOptions {
  std::string base;
  std::string adapter;  // a folder with adapter_config.json; empty: none
  std::string text;
  std::string out;
  std::string quantize;  // as FinetuneOptions
  bool double_quant = false;
};

int RunFinetune(const FinetuneOptions& options);
int RunPretrain(const PretrainOptions& options);
int RunInit(const InitOptions& options);
int RunLogits(const LogitsOptions& options);

}  // namespace tune
