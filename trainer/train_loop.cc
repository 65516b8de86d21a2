#include "trainer/train_loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "trainer/checkpoint.h"
#include "trainer/device.h"
#include "trainer/lr_schedule.h"
#include "trainer/rng_state.h"

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;

// Example order: epoch e visits the training set in a permutation seeded by
// (seed, e); global position p is example perm_{p / n}[p % n].
class DataOrder {
 public:
  DataOrder(const std::vector<text::Example>& data, uint64_t seed) : data_(data), seed_(seed) {}

  const text::Example* At(int64_t position) {
    const int64_t n = static_cast<int64_t>(data_.size());
    const int64_t epoch = position / n;
    if (epoch != epoch_) {
      perm_.resize(n);
      for (int64_t i = 0; i < n; ++i) perm_[i] = i;
      std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch));
      for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, portable
        const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
        std::swap(perm_[i], perm_[j]);
      }
      epoch_ = epoch;
    }
    return &data_[perm_[position % n]];
  }

 private:
  const std::vector<text::Example>& data_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<int64_t> perm_;
};

int64_t CountTargets(const text::Example& e) {
  int64_t n = 0;
  for (size_t i = 1; i < e.loss_mask.size(); ++i) n += e.loss_mask[i] != 0;
  return n;
}

void SetLearningRate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

// After a restore: every parameter group's hyperparameters are the command
// line's. libtorch's Optimizer::load (torch/optim/serialize.h) restores only
// the per-parameter state (moments, step counts) and keeps the groups'
// options, but PyTorch's load_state_dict replaces them with the saved ones;
// set them here so the command line wins whatever the loader does.
void ApplyCommandLineOptions(torch::optim::Optimizer& opt, const LoopOptions& o) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(o.lr).weight_decay(o.weight_decay);
  }
}

// The loop's hyperparameters, written into every checkpoint as
// training_args.json (for the person reading it and for DescribeChanges).
std::string TrainingArgsJson(const LoopOptions& o) {
  return nlohmann::json{{"lr", o.lr},
                        {"weight_decay", o.weight_decay},
                        {"warmup_steps", o.warmup_steps},
                        {"schedule", o.schedule},
                        {"max_steps", o.max_steps},
                        {"batch_size", o.batch_size},
                        {"grad_accum", o.grad_accum},
                        {"clip", o.clip},
                        {"seed", o.seed}}
             .dump(2) +
         "\n";
}

// "; from the command line: lr 0.001 (the checkpoint's run had 0.0005), ..."
// for the hyperparameters that differ from the checkpoint's
// training_args.json; "" when none differs or the file is absent. Prose
// without name=number pairs (stderr is read for metrics too).
std::string DescribeChanges(const std::string& dir, const LoopOptions& o) {
  std::ifstream in(std::filesystem::path(dir) / "training_args.json");
  if (!in) return "";
  const nlohmann::json saved = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!saved.is_object()) return "";
  const nlohmann::json now = nlohmann::json::parse(TrainingArgsJson(o));
  std::string out;
  for (const auto& [key, value] : now.items()) {
    auto it = saved.find(key);
    if (it == saved.end() || *it == value) continue;
    auto show = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    out += (out.empty() ? "; from the command line: " : ", ") + key + " " + show(value) +
           " (the checkpoint's run had " + show(*it) + ")";
  }
  return out;
}

// Mean eval loss over `eval` (rank r takes examples r, r + W, ...), reduced.
Result<double> Evaluate(CausalLm& model, const std::vector<text::Example>& eval, int64_t batch_size,
                        int32_t pad_id, Distributed& dist) {
  torch::NoGradGuard no_grad;
  model->eval();
  double sum = 0.0, count = 0.0;
  std::vector<const text::Example*> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    Batch b = MakeBatch(batch, pad_id);
    const torch::Device dev = ModelDevice(model);
    sum += model->TargetLossSum(b.ids.to(dev), b.labels.to(dev)).item<double>();
    count += static_cast<double>(b.targets);
    batch.clear();
  };
  for (size_t i = dist.rank(); i < eval.size(); i += dist.world_size()) {
    batch.push_back(&eval[i]);
    if (static_cast<int64_t>(batch.size()) == batch_size) flush();
  }
  flush();
  model->train();
  torch::Tensor t = torch::tensor({sum, count}, torch::kFloat64);
  TUNE_RETURN_IF_ERROR(dist.AllReduceSum(t));
  const double total = t[1].item<double>();
  return total > 0 ? t[0].item<double>() / total : std::nan("");
}

std::string Fmt(double v, int precision = 6) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
  return buf;
}

}  // namespace

Batch MakeBatch(const std::vector<const text::Example*>& examples, int32_t pad_id) {
  int64_t T = 0;
  for (const auto* e : examples) T = std::max<int64_t>(T, static_cast<int64_t>(e->ids.size()));
  T = std::max<int64_t>(T, 2);
  const int64_t B = static_cast<int64_t>(examples.size());
  Batch out;
  out.ids = torch::full({B, T}, static_cast<int64_t>(pad_id), torch::kInt64);
  out.labels = torch::full({B, T}, static_cast<int64_t>(-100), torch::kInt64);
  auto ids = out.ids.accessor<int64_t, 2>();
  auto labels = out.labels.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const text::Example& e = *examples[b];
    for (size_t t = 0; t < e.ids.size(); ++t) {
      ids[b][t] = e.ids[t];
      if (t < e.loss_mask.size() && e.loss_mask[t]) labels[b][t] = e.ids[t];
    }
    out.tokens += static_cast<int64_t>(e.ids.size());
    out.targets += CountTargets(e);
  }
  return out;
}

std::string ResolveOutput(const LoopOptions& options) {
  if (!options.output.empty()) return options.output;
  if (const char* dir = std::getenv("TUNE_TRIAL_DIR"); dir != nullptr && *dir != '\0') return dir;
  return "output";
}

ResumePoint ResolveResume(const LoopOptions& options, const std::string& output) {
  if (!options.resume_from.empty()) return {options.resume_from, "--resume-from"};
  if (const char* dir = std::getenv("TUNE_RESUME_FROM"); dir != nullptr && *dir != '\0') {
    return {dir, "$TUNE_RESUME_FROM"};
  }
  if (options.auto_resume) {
    std::string latest = LatestCheckpoint(output);
    if (!latest.empty()) return {latest, "the newest checkpoint in " + output};
  }
  return {};
}

Status RunTrainLoop(CausalLm model, std::vector<torch::Tensor> params, const std::vector<text::Example>& train,
                    const std::vector<text::Example>& eval, const LoopOptions& o, int32_t pad_id,
                    Distributed& dist, const TrainHooks& hooks) {
  if (train.empty()) return Status::InvalidArgument("the training set is empty");
  if (o.batch_size <= 0 || o.grad_accum <= 0 || o.max_steps < 0 || o.eval_every < 0 || o.log_every < 0) {
    return Status::InvalidArgument("--batch-size and --grad-accum must be positive; steps non-negative");
  }
  TUNE_ASSIGN_OR_RETURN(ScheduleKind kind, ParseScheduleKind(o.schedule));
  const std::string output = ResolveOutput(o);
  std::error_code ec;
  if (dist.is_main()) {
    std::filesystem::create_directories(output, ec);
    if (ec) return Status::Internal("cannot create output folder " + output + ": " + ec.message());
  }

  const torch::Device device = ModelDevice(model);  // batches go there; the flattened gradients stay there
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  int64_t start_step = 0;
  const ResumePoint resume = ResolveResume(o, output);
  if (!resume.dir.empty()) {
    if (hooks.check_checkpoint) TUNE_RETURN_IF_ERROR(hooks.check_checkpoint(resume.dir));
    auto loaded = LoadCheckpoint(resume.dir, hooks.weights_file, optimizer, device, dist.rank());
    if (!loaded.ok()) {  // name what pointed there: a stale $TUNE_RESUME_FROM reads differently from a typo
      return Status(loaded.status().code(), resume.source + ": " + loaded.status().message());
    }
    TUNE_RETURN_IF_ERROR(hooks.load_weights(loaded->weights));
    ApplyCommandLineOptions(optimizer, o);
    start_step = loaded->step;
    if (dist.is_main()) {
      std::cerr << "lora_train: resumed from " << resume.dir << " (" << resume.source << ") at step " << start_step
                << DescribeChanges(resume.dir, o) << std::endl;
    }
  }
  std::map<std::string, std::string> extra_files = hooks.extra_files;
  extra_files["training_args.json"] = TrainingArgsJson(o);

  DataOrder order(train, o.seed);
  const int64_t world = dist.world_size(), rank = dist.rank();
  const int64_t per_step = o.batch_size * world * o.grad_accum;
  model->train();

  auto emit = [&](int64_t step, double train_loss, std::optional<double> eval_loss, double lr, double tps) {
    if (!dist.is_main()) return;
    std::string line = "step=" + std::to_string(step);
    if (!std::isnan(train_loss)) line += " train_loss=" + Fmt(train_loss, o.metric_digits);
    if (eval_loss) line += " eval_loss=" + Fmt(*eval_loss, o.metric_digits);
    line += " lr=" + Fmt(lr) + " tokens_per_s=" + Fmt(tps, 7);
    std::cout << line << std::endl;
  };
  auto save = [&](int64_t step) -> Status {  // on every rank: each one's RNG state goes into the checkpoint
    TUNE_ASSIGN_OR_RETURN(TensorMap rng, GatherRngStates(dist, CaptureRngState(device)));
    if (!dist.is_main()) return Status::Ok();
    return SaveCheckpoint(output, step, hooks.weights(), hooks.weights_file, optimizer, rng, extra_files,
                          o.keep_checkpoints);
  };

  double window_loss = 0.0, window_targets = 0.0, window_seconds = 0.0;
  int64_t window_tokens = 0;
  double lr = 0.0;
  for (int64_t step = start_step; step < o.max_steps; ++step) {
    auto t0 = Clock::now();
    // The global batch of this step: positions [step * per_step, +per_step).
    const int64_t base = step * per_step;
    int64_t step_targets = 0, step_tokens = 0;
    for (int64_t p = base; p < base + per_step; ++p) {
      const text::Example* e = order.At(p);
      step_targets += CountTargets(*e);
      step_tokens += static_cast<int64_t>(e->ids.size());
    }
    const double norm = 1.0 / std::max<int64_t>(1, step_targets);
    double local_loss = 0.0;
    for (int64_t m = 0; m < o.grad_accum; ++m) {
      std::vector<const text::Example*> examples;
      for (int64_t i = 0; i < o.batch_size; ++i) {
        examples.push_back(order.At(base + (m * world + rank) * o.batch_size + i));
      }
      Batch b = MakeBatch(examples, pad_id);
      torch::Tensor loss_sum = model->TargetLossSum(b.ids.to(device), b.labels.to(device));
      (loss_sum * norm).backward();
      local_loss += loss_sum.item<double>();
    }
    // One flattened all-reduce: every gradient plus the loss sum.
    std::vector<torch::Tensor> grads;
    for (auto& p : params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad().reshape({-1}));
    }
    if (world > 1) {
      grads.push_back(torch::tensor({static_cast<float>(local_loss)}).to(device));
      torch::Tensor flat = torch::cat(grads);
      TUNE_RETURN_IF_ERROR(dist.AllReduceSum(flat));
      int64_t off = 0;
      for (auto& p : params) {
        p.mutable_grad().copy_(flat.slice(0, off, off + p.numel()).view_as(p));
        off += p.numel();
      }
      local_loss = flat[off].item<double>();
    }
    if (o.clip > 0) torch::nn::utils::clip_grad_norm_(params, o.clip);
    lr = LearningRate(kind, o.lr, step, o.warmup_steps, o.max_steps);
    SetLearningRate(optimizer, lr);
    optimizer.step();
    optimizer.zero_grad();
    window_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    window_loss += local_loss;
    window_targets += static_cast<double>(step_targets);
    window_tokens += step_tokens;

    const int64_t done = step + 1;
    const bool last = done == o.max_steps;
    const bool do_eval = !eval.empty() && (last || (o.eval_every > 0 && done % o.eval_every == 0));
    const bool do_log = do_eval || last || (o.log_every > 0 && done % o.log_every == 0);
    std::optional<double> eval_loss;
    if (do_eval) {
      TUNE_ASSIGN_OR_RETURN(double el, Evaluate(model, eval, o.batch_size, pad_id, dist));
      eval_loss = el;
    }
    // The checkpoint of a step is saved before its report is printed: a
    // tuner that stops the trial on that report (PBT's pause or exploit)
    // then finds checkpoint-<done> (docs/architecture.md, section 4.7).
    const bool do_save = o.save_every > 0 ? done % o.save_every == 0 : (do_eval && !last);
    if (do_save || last) TUNE_RETURN_IF_ERROR(save(done));
    if (do_log) {
      const double tl = window_targets > 0 ? window_loss / window_targets : std::nan("");
      emit(done, tl, eval_loss, lr, window_seconds > 0 ? window_tokens / window_seconds : 0.0);
      window_loss = window_targets = window_seconds = 0.0;
      window_tokens = 0;
    }
  }
  if (start_step >= o.max_steps && !eval.empty()) {  // resumed a finished run: report again
    TUNE_ASSIGN_OR_RETURN(double el, Evaluate(model, eval, o.batch_size, pad_id, dist));
    // --max-steps 0 reports the base model's eval loss (lr 0: no step taken).
    const double last_lr =
        o.max_steps > 0 ? LearningRate(kind, o.lr, o.max_steps - 1, o.warmup_steps, o.max_steps) : 0.0;
    emit(o.max_steps, std::nan(""), el, last_lr, 0.0);
  }
  if (dist.is_main()) TUNE_RETURN_IF_ERROR(hooks.write_final(output));
  if (world > 1) TUNE_RETURN_IF_ERROR(dist.Barrier());
  return Status::Ok();
}

}  // namespace tune
