// trainer_bench: training throughput of lora_train's model and step, the
// same model, data and step as bench/lora_ref.py (the Python PyTorch
// reference), for a side-by-side comparison (bench/trainer_bench.sh,
// bench/dist_bench.sh).
//
// Model: byte-level vocabulary (256 bytes + BOS/EOS/PAD), Llama-style decoder
// (RMSNorm, RoPE, SwiGLU, tied embeddings), LoRA on q_proj,v_proj (r 8,
// alpha 16, dropout 0.05), AdamW on the adapter. Step: sample a batch, forward,
// backward, AdamW step, zero grads; the first --warmup steps are untimed.
// Prints one line `RESULT {json}`. --device and --dtype place the model as
// lora_train's flags do (trainer/device.h; default cpu, fp32).
//
// Data-parallel, like lora_train: with WORLD_SIZE > 1 in the environment
// (torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or with --nproc N
// (this program runs N copies of itself on this host with that environment
// and OMP_NUM_THREADS=--threads set, as lora_ref.py --nproc does), the ranks
// form a tune::Distributed group; each rank samples its own batch (seed +
// 1000 * rank, dropout likewise) and between backward and the AdamW step the
// LoRA gradients are averaged over the ranks:
//   --allreduce flat        one all-reduce (SUM) of one buffer holding every
//                           LoRA gradient plus the loss, then / world size
//                           (train_loop.cc's step)
//   --allreduce per_tensor  one all-reduce per gradient tensor, then / world
//                           size; the loss stays local
// The timed steps run barrier to barrier; rank 0 prints the RESULT with the
// global tokens/s (all ranks' tokens over the wall time), the median step,
// all-reduce (the collectives alone) and sync (flatten + collectives + copy
// back) times per step, and whether the ranks' adapters are identical after.
// The all-reduce time per step includes waiting for the slower rank; after
// the run the same collectives are timed again right after a barrier
// (allreduce_aligned_ms_median), which leaves the transfer alone.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/device.h"
#include "trainer/distributed.h"
#include "trainer/model.h"
#include "trainer/runtime_info.h"

namespace {

// Back-to-back all-reduces timed after the run (see allreduce_aligned_ms).
constexpr int kAlignedProbes = 20;

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// --nproc N: runs N copies of this executable (same arguments) as ranks
// 0..N-1 of a group on 127.0.0.1:port, each with OMP_NUM_THREADS=threads.
// Returns 0 when every rank exits 0; otherwise stops the remaining ranks and
// returns 1.
int LaunchRanks(int nproc, int port, int threads, char** argv) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("trainer_bench: fork");
      for (pid_t p : pids) kill(p, SIGTERM);
      return 1;
    }
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 0);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
      execv("/proc/self/exe", argv);
      std::perror("trainer_bench: exec");
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) {
      ++left;
      continue;
    }
    if (pid < 0) break;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (failed++ == 0) {
        std::cerr << "trainer_bench: a rank failed; stopping the others" << std::endl;
        for (pid_t p : pids) {
          if (p != pid) kill(p, SIGTERM);
        }
      }
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!tune::ConfigureAllocator()) std::cerr << "trainer_bench: glibc kept its default malloc thresholds\n";
  int d_model = 128, n_layers = 2, n_heads = 4, seq_len = 128, batch = 8, steps = 20, warmup = 3,
      threads = 2;
  int lora_r = 8;
  int nproc = 1, master_port = 29541, dist_timeout = 120;
  double lora_alpha = 16, lora_dropout = 0.05, lr = 2e-4;
  std::string targets = "q_proj,v_proj", data = "/usr/share/common-licenses/GPL-3", tag;
  std::string allreduce = "flat";
  std::string device = "cpu", dtype = "fp32";
  uint64_t seed = 1234;
  CLI::App app{"trainer_bench: LoRA training throughput of the C++ trainer"};
  app.add_option("--d_model", d_model);
  app.add_option("--n_layers", n_layers);
  app.add_option("--n_heads", n_heads);
  app.add_option("--seq_len", seq_len);
  app.add_option("--batch", batch, "per-rank micro-batch (sequences)");
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads, "intra-op threads per process");
  app.add_option("--lora_r", lora_r);
  app.add_option("--lora_alpha", lora_alpha);
  app.add_option("--lora_dropout", lora_dropout);
  app.add_option("--lora_targets", targets);
  app.add_option("--lr", lr);
  app.add_option("--data", data);
  app.add_option("--seed", seed);
  app.add_option("--tag", tag);
  app.add_option("--nproc", nproc, ">1: run this many ranks here (unless WORLD_SIZE is set)");
  app.add_option("--master_port", master_port, "rendezvous port with --nproc");
  app.add_option("--allreduce", allreduce, "flat | per_tensor (with more than one rank)")
      ->check(CLI::IsMember({"flat", "per_tensor"}));
  app.add_option("--dist_timeout", dist_timeout, "seconds a collective may take");
  app.add_option("--device", device, "cpu | cuda | cuda:N | auto (as lora_train's --device)");
  app.add_option("--dtype", dtype, "fp32 | bf16: the frozen base and the forward (LoRA stays fp32)");
  CLI11_PARSE(app, argc, argv);

  const char* world_env = std::getenv("WORLD_SIZE");
  if (nproc > 1 && (world_env == nullptr || *world_env == '\0')) {
    return LaunchRanks(nproc, master_port, threads, argv);
  }
  auto place = tune::ResolvePlacement(device, dtype, "auto", tune::LocalRank(), tune::LocalWorldSize());
  if (!place.ok()) {
    std::cerr << "trainer_bench: " << place.status().message() << std::endl;
    return 2;
  }
  auto dist_or = tune::Distributed::FromEnv(place->backend, dist_timeout, place->device);
  if (!dist_or.ok()) {
    std::cerr << "trainer_bench: " << dist_or.status().message() << std::endl;
    return 1;
  }
  std::unique_ptr<tune::Distributed> dist = std::move(dist_or).value();
  const int world = dist->world_size();
  const int rank = dist->rank();

  tune::ConfigureThreads(threads);
  if (rank == 0) std::cerr << "trainer_bench: " << tune::DescribeRuntime() << std::endl;
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
  torch::manual_seed(seed);  // identical base and LoRA init on every rank
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
  tune::PlaceModel(model, *place);
  const torch::Device dev = place->device;
  model->train();
  std::vector<torch::Tensor> params = model->LoraParameters();
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(lr).weight_decay(0.0));
  if (world > 1) torch::manual_seed(seed + 1000 * rank);  // per-rank dropout streams

  std::ifstream in(data, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (static_cast<int>(bytes.size()) < seq_len + 1) bytes.assign(1 << 16, 'x');
  torch::Tensor corpus =
      torch::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, torch::kUInt8)
          .to(torch::kInt64);
  auto gen = at::detail::createCPUGenerator(seed + 1000 * rank);

  // Per timed step: collectives only, and flatten + collectives + copy back.
  std::vector<double> comm_times, sync_times;
  bool timing = false;
  // Averages the LoRA gradients over the ranks; returns the loss to report
  // (the global mean with --allreduce flat, else this rank's).
  auto sync = [&](double local_loss) -> tune::Result<double> {
    const auto t0 = std::chrono::steady_clock::now();
    const double comm0 = dist->comm_seconds();
    double loss = local_loss;
    if (allreduce == "flat") {
      std::vector<torch::Tensor> parts;
      for (auto& p : params) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        parts.push_back(p.grad().reshape({-1}));
      }
      parts.push_back(torch::tensor({static_cast<float>(local_loss)}).to(dev));
      torch::Tensor flat = torch::cat(parts);
      TUNE_RETURN_IF_ERROR(dist->AllReduceSum(flat));
      flat.div_(world);
      int64_t off = 0;
      for (auto& p : params) {
        p.mutable_grad().copy_(flat.slice(0, off, off + p.numel()).view_as(p));
        off += p.numel();
      }
      loss = flat[off].item<double>();
    } else {
      for (auto& p : params) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        TUNE_RETURN_IF_ERROR(dist->AllReduceSum(p.mutable_grad()));
        p.mutable_grad().div_(world);
      }
    }
    if (timing) {
      comm_times.push_back(dist->comm_seconds() - comm0);
      sync_times.push_back(Seconds(t0));
    }
    return loss;
  };

  auto step = [&]() -> tune::Result<double> {
    torch::Tensor offs = torch::randint(0, corpus.numel() - seq_len, {batch}, gen, torch::kInt64);
    std::vector<torch::Tensor> rows;
    for (int b = 0; b < batch; ++b) {
      rows.push_back(corpus.slice(0, offs[b].item<int64_t>()).slice(0, 0, seq_len));
    }
    torch::Tensor toks =
        torch::cat({torch::full({batch, 1}, kBos, torch::kInt64), torch::stack(rows)}, 1);
    torch::Tensor x = toks.slice(1, 0, -1).to(dev), y = toks.slice(1, 1).to(dev);
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}).to(torch::kFloat32),
                                                              y.reshape({-1}));
    loss.backward();
    double value = loss.item<double>();
    if (world > 1) {
      TUNE_ASSIGN_OR_RETURN(value, sync(value));
    }
    opt.step();
    opt.zero_grad();
    return value;
  };
  auto fail = [&](const tune::Status& st) {
    std::cerr << "trainer_bench: rank " << rank << ": " << st.message() << std::endl;
    return 1;
  };

  std::vector<double> losses, times;
  for (int i = 0; i < warmup; ++i) {
    auto l = step();
    if (!l.ok()) return fail(l.status());
    losses.push_back(*l);
  }
  if (auto st = dist->Barrier(); !st.ok()) return fail(st);
  timing = true;
  auto t_all = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto l = step();
    if (!l.ok()) return fail(l.status());
    losses.push_back(*l);
    times.push_back(Seconds(t0));
  }
  if (auto st = dist->Barrier(); !st.ok()) return fail(st);
  const double wall = Seconds(t_all);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double rss_mib = ru.ru_maxrss / 1024.0;
  int64_t n_trainable = 0;
  for (auto& p : params) n_trainable += p.numel();
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());

  // The fields every RESULT line has (nlohmann::json keeps keys sorted).
  nlohmann::json res{{"tag", tag},
                     {"impl", "cpp"},
                     {"d_model", d_model},
                     {"n_layers", n_layers},
                     {"seq_len", seq_len},
                     {"batch", batch},
                     {"threads", threads},
                     {"device", place->device.str()},
                     {"dtype", dtype},
                     {"loss_first", losses.front()},
                     {"loss_last", losses.back()},
                     {"peak_rss_mib_self", rss_mib},
                     {"params_trainable", n_trainable}};
  if (world == 1) {  // the single-process output bench/trainer_bench.sh reads
    res["tokens_per_s"] = static_cast<double>(batch) * seq_len * steps / wall;
    res["step_ms_median"] = 1e3 * sorted[sorted.size() / 2];
    std::cout << "RESULT " << res.dump() << std::endl;
    return 0;
  }

  // Every rank's adapter checksum and peak RSS, gathered by a sum of one-hot
  // rows: rank r fills row r.
  torch::Tensor gathered = torch::zeros({world, 2}, torch::kFloat64);
  {
    torch::NoGradGuard no_grad;
    double sum = 0;
    for (auto& p : params) {
      torch::Tensor d = p.to(torch::kFloat64);
      sum += d.sum().item<double>() + d.abs().sum().item<double>();
    }
    auto row = gathered.accessor<double, 2>()[rank];
    row[0] = sum;
    row[1] = rss_mib;
  }
  if (auto st = dist->AllReduceSum(gathered); !st.ok()) return fail(st);
  // The collectives alone once the ranks are aligned by a barrier: what the
  // all-reduce time per step costs without waiting for the slower rank.
  std::vector<double> aligned_times;
  for (int i = 0; i < kAlignedProbes; ++i) {
    std::vector<torch::Tensor> bufs;
    if (allreduce == "flat") {
      bufs.push_back(torch::zeros({n_trainable + 1}, torch::TensorOptions().device(dev)));
    } else {
      for (auto& p : params) bufs.push_back(torch::zeros_like(p));
    }
    if (auto st = dist->Barrier(); !st.ok()) return fail(st);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& b : bufs) {
      if (auto st = dist->AllReduceSum(b); !st.ok()) return fail(st);
    }
    aligned_times.push_back(Seconds(t0));
  }
  if (rank != 0) return 0;
  bool in_sync = true;
  std::vector<double> rss_per_rank;
  const double sum0 = gathered[0][0].item<double>();
  for (int r = 0; r < world; ++r) {
    in_sync = in_sync && gathered[r][0].item<double>() == sum0;
    rss_per_rank.push_back(gathered[r][1].item<double>());
  }
  const double global_tokens = static_cast<double>(batch) * seq_len * world;
  res.update(nlohmann::json{
      {"world_size", world},
      {"allreduce", allreduce},
      {"tokens_per_s", global_tokens * steps / wall},
      {"tokens_per_s_median_step", global_tokens / Median(times)},
      {"step_ms_median", 1e3 * Median(times)},
      {"allreduce_ms_median", 1e3 * Median(comm_times)},
      {"sync_ms_median", 1e3 * Median(sync_times)},
      {"allreduce_aligned_ms_median", 1e3 * Median(aligned_times)},
      {"collectives_per_step", allreduce == "flat" ? 1 : static_cast<int>(params.size())},
      {"loss_scope", allreduce == "flat" ? "global" : "rank0"},
      {"ranks_in_sync", in_sync},
      {"peak_rss_mib_per_rank", rss_per_rank}});
  std::cout << "RESULT " << res.dump() << std::endl;
  return 0;
}
