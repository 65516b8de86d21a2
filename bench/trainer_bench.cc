// trainer_bench: training throughput of lora_train's model and step, the
// same model, data and step as bench/lora_ref.py (the Python PyTorch
// reference), for a side-by-side comparison (bench/trainer_bench.sh).
//
// Model: byte-level vocabulary (256 bytes + BOS/EOS/PAD), Llama-style decoder
// (RMSNorm, RoPE, SwiGLU, tied embeddings), LoRA on q_proj,v_proj (r 8,
// alpha 16, dropout 0.05), AdamW on the adapter. Step: sample a batch, forward,
// backward, AdamW step, zero grads; the first --warmup steps are untimed.
// Prints one line `RESULT {json}`.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "trainer/model.h"
#include "trainer/runtime_info.h"

int main(int argc, char** argv) {
  int d_model = 128, n_layers = 2, n_heads = 4, seq_len = 128, batch = 8, steps = 20, warmup = 3, threads = 2;
  int lora_r = 8;
  double lora_alpha = 16, lora_dropout = 0.05, lr = 2e-4;
  std::string targets = "q_proj,v_proj", data = "/usr/share/common-licenses/GPL-3", tag;
  uint64_t seed = 1234;
  CLI::App app{"trainer_bench: LoRA training throughput of the C++ trainer"};
  app.add_option("--d_model", d_model);
  app.add_option("--n_layers", n_layers);
  app.add_option("--n_heads", n_heads);
  app.add_option("--seq_len", seq_len);
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--lora_r", lora_r);
  app.add_option("--lora_alpha", lora_alpha);
  app.add_option("--lora_dropout", lora_dropout);
  app.add_option("--lora_targets", targets);
  app.add_option("--lr", lr);
  app.add_option("--data", data);
  app.add_option("--seed", seed);
  app.add_option("--tag", tag);
  CLI11_PARSE(app, argc, argv);

  tune::ConfigureThreads(threads);
  std::cerr << "trainer_bench: " << tune::DescribeRuntime() << std::endl;
  constexpr int64_t kVocab = 259, kBos = 256;
  tune::ModelConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = d_model;
  c.intermediate_size = 64 * static_cast<int64_t>(std::ceil(8.0 * d_model / 3.0 / 64.0));
  c.num_hidden_layers = n_layers;
  c.num_attention_heads = n_heads;
  c.num_key_value_heads = n_heads;
  c.head_dim = d_model / n_heads;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = true;
  torch::manual_seed(seed);
  tune::CausalLm model(c);
  tune::LoraConfig lora;
  lora.r = lora_r;
  lora.alpha = lora_alpha;
  lora.dropout = lora_dropout;
  lora.target_modules = tune::SplitModuleList(targets);
  if (auto st = model->ApplyLora(lora); !st.ok()) {
    std::cerr << st.message() << std::endl;
    return 2;
  }
  model->train();
  std::vector<torch::Tensor> params = model->LoraParameters();
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(lr).weight_decay(0.0));

  std::ifstream in(data, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (static_cast<int>(bytes.size()) < seq_len + 1) bytes.assign(1 << 16, 'x');
  torch::Tensor corpus = torch::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, torch::kUInt8)
                             .to(torch::kInt64);
  auto gen = at::detail::createCPUGenerator(seed);

  auto step = [&]() {
    torch::Tensor offs = torch::randint(0, corpus.numel() - seq_len, {batch}, gen, torch::kInt64);
    std::vector<torch::Tensor> rows;
    for (int b = 0; b < batch; ++b) rows.push_back(corpus.slice(0, offs[b].item<int64_t>()).slice(0, 0, seq_len));
    torch::Tensor toks = torch::cat({torch::full({batch, 1}, kBos, torch::kInt64), torch::stack(rows)}, 1);
    torch::Tensor x = toks.slice(1, 0, -1), y = toks.slice(1, 1);
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}), y.reshape({-1}));
    loss.backward();
    opt.step();
    opt.zero_grad();
    return loss.item<double>();
  };
  std::vector<double> losses, times;
  for (int i = 0; i < warmup; ++i) losses.push_back(step());
  auto t_all = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    losses.push_back(step());
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json res{{"tag", tag},
                     {"impl", "cpp"},
                     {"d_model", d_model},
                     {"n_layers", n_layers},
                     {"seq_len", seq_len},
                     {"batch", batch},
                     {"threads", threads},
                     {"tokens_per_s", static_cast<double>(batch) * seq_len * steps / wall},
                     {"step_ms_median", 1e3 * sorted[sorted.size() / 2]},
                     {"loss_first", losses.front()},
                     {"loss_last", losses.back()},
                     {"peak_rss_mib_self", ru.ru_maxrss / 1024.0},
                     {"params_trainable", [&] { int64_t n = 0; for (auto& p : params) n += p.numel(); return n; }()}};
  std::cout << "RESULT " << res.dump() << std::endl;
  return 0;
}
