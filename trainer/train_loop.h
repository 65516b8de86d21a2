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
Status RunTrainLoop(CausalLm model, std::vector<torch::Tensor> params, const std::vector<text::Example>& train,
                    const std::vector<text::Example>& eval, const LoopOptions& options, int32_t pad_id,
                    Distributed& dist, const TrainHooks& hooks);

// The output folder: options.output, else $TUNE_TRIAL_DIR, else ./output.
std::string ResolveOutput(const LoopOptions& options);

}  // namespace tune
