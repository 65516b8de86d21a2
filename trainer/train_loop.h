// The training loop shared by LoRA fine-tuning and pretraining: deterministic
// data order, gradient accumulation, one flattened all-reduce per step,
// clipping, AdamW with a warmup schedule, evaluation, metric lines,
// checkpoints and resume. Written in llm.c's straight-line style.
//
// Loss normalisation: each step's loss is the sum of token losses over the
// whole global batch (all micro-batches, all ranks) divided by its number of
// target tokens, so W ranks with batch b give the same update as one rank
// with batch W*b.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/distributed.h"
#include "trainer/model.h"
#include "trainer/text/data.h"
#include "trainer/train_options.h"

namespace tune {

struct TrainHooks {
  // The trainable weights as they are saved (PEFT keys for LoRA).
  std::function<TensorMap()> weights;
  // Copies saved weights back into the parameters (resume).
  std::function<Status(const TensorMap&)> load_weights;
  // Refuses a checkpoint folder this run cannot continue from (LoRA: another
  // rank or other target modules), before anything is loaded. May be empty.
  std::function<Status(const std::string& dir)> check_checkpoint;
  std::string weights_file;                        // inside checkpoints
  std::map<std::string, std::string> extra_files;  // also written into checkpoints
  // Writes the final artifacts into the output folder (rank 0 only).
  std::function<Status(const std::string& output)> write_final;
};

// A batch of examples padded to the longest: ids [B, T] int64 and labels
// [B, T] (the id where loss_mask is 1, else -100).
struct Batch {
  torch::Tensor ids;
  torch::Tensor labels;
  int64_t tokens = 0;   // non-padding tokens
  int64_t targets = 0;  // labels[:, 1:] != -100
};
Batch MakeBatch(const std::vector<const text::Example*>& examples, int32_t pad_id);

// Runs options.max_steps optimizer steps over `train` (evaluating on `eval`)
// and calls hooks.write_final on rank 0. `params` are the trainable tensors.
// Non-OK on I/O or collective failures; the caller prints it and exits 1.
//
// Continuing (ResolveResume names the checkpoint; trainer/README.md,
// "Continuing from a checkpoint"): the checkpoint gives the trainable
// weights, the AdamW moments and step counts, every rank's RNG state and the
// global step (hence the data position: step x global batch into the order
// --seed gives); the command line gives every hyperparameter. The restored
// optimizer keeps its moments, but each parameter group's lr and weight
// decay are the command line's, and lr(step) is the schedule of the command
// line's --lr, --warmup-steps, --schedule and --max-steps for every step
// after the checkpoint's, as if the run had had those values from step 0.
Status RunTrainLoop(CausalLm model, std::vector<torch::Tensor> params, const std::vector<text::Example>& train,
                    const std::vector<text::Example>& eval, const LoopOptions& options, int32_t pad_id,
                    Distributed& dist, const TrainHooks& hooks);

// The output folder: options.output, else $TUNE_TRIAL_DIR, else ./output.
std::string ResolveOutput(const LoopOptions& options);

// The checkpoint a run continues from, and what named it.
struct ResumePoint {
  std::string dir;     // "" : start from step 0
  std::string source;  // "--resume-from", "$TUNE_RESUME_FROM" or "the newest checkpoint in <output>"
};
// options.resume_from if non-empty (so `--resume-from ""` names none), else
// $TUNE_RESUME_FROM if set and non-empty, else (options.auto_resume) the
// newest complete checkpoint-<step> folder in `output`, else none.
ResumePoint ResolveResume(const LoopOptions& options, const std::string& output);

}  // namespace tune
