// The lora_train subcommands: fine-tune (LoRA), pretrain, init, logits.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trainer/device.h"
#include "trainer/distributed.h"
#include "trainer/lora_config.h"
#include "trainer/model.h"
#include "trainer/runtime_info.h"
#include "trainer/safetensors.h"
#include "trainer/text/data.h"
#include "trainer/text/tokenizer.h"
#include "trainer/train_loop.h"
#include "trainer/train_options.h"

namespace tune {
namespace {

namespace fs = std::filesystem;

// Exit code for a failed Status: 2 for bad input, 1 otherwise.
int Fail(const Status& st) {
  std::cerr << "lora_train: " << st.message() << std::endl;
  return st.IsInvalidArgument() || st.IsNotFound() ? 2 : 1;
}

// Runs `body`, turning library exceptions into a readable failure.
template <typename F>
int Guarded(F body) {
  try {
    Status st = body();
    return st.ok() ? 0 : Fail(st);
  } catch (const c10::Error& e) {
    std::cerr << "lora_train: libtorch error: " << e.what_without_backtrace() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "lora_train: error: " << e.what() << std::endl;
  }
  return 1;
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return Status::Internal("cannot write " + path);
  return Status::Ok();
}

// Copies `from` to `to_dir`/`name`, whatever `from` is called.
Status CopyFileAs(const std::string& from, const std::string& to_dir, const std::string& name) {
  std::error_code ec;
  const fs::path to = fs::path(to_dir) / name;
  if (fs::exists(to) && fs::equivalent(from, to, ec)) return Status::Ok();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::Internal("cannot copy " + from + " to " + to.string() + ": " + ec.message());
  return Status::Ok();
}

int32_t PadId(const text::Tokenizer& tok) {
  if (auto id = tok.pad_id()) return *id;
  if (auto id = tok.eos_id()) return *id;
  return 0;
}

Status CheckVocab(const ModelConfig& c, const text::Tokenizer& tok, const std::string& where) {
  if (tok.vocab_size() > c.vocab_size) {
    return Status::InvalidArgument(where + ": the tokenizer has " + std::to_string(tok.vocab_size()) +
                                   " ids but the model's vocab_size is " + std::to_string(c.vocab_size));
  }
  return Status::Ok();
}

int64_t CountParams(const std::vector<torch::Tensor>& ps) {
  int64_t n = 0;
  for (const auto& p : ps) n += p.numel();
  return n;
}

// Base parameters, a quantized projection's weight counted as in*out.
int64_t CountBaseParams(CausalLm& model) {
  int64_t n = CountParams(model->parameters());
  for (const auto& m : model->modules()) {
    auto proj = std::dynamic_pointer_cast<ProjectionImpl>(m);
    if (proj && proj->quantized()) n += proj->in_features() * proj->out_features();
  }
  return n;
}

// ", nf4 (double quant) decoder projections: X MiB instead of Y MiB in fp32"
std::string DescribeQuantization(CausalLm& model, const BaseQuantization& q) {
  if (!q.on) return "";
  int64_t held = 0, full = 0;
  for (const auto& m : model->modules()) {
    auto proj = std::dynamic_pointer_cast<ProjectionImpl>(m);
    if (!proj || !proj->quantized()) continue;
    held += proj->quantized_bytes();
    full += proj->in_features() * proj->out_features() * 4;
  }
  std::ostringstream s;
  s.precision(4);
  s << "; decoder projections in " << QuantTypeName(q.type) << (q.double_quant ? " with double quantization" : "")
    << ": " << held / 1048576.0 << " MiB instead of " << full / 1048576.0 << " MiB in fp32";
  return s.str();
}

void LogStart(const Distributed& dist, const std::string& what) {
  if (!dist.is_main()) return;
  std::cerr << "lora_train: " << what << "\n"
            << "lora_train: " << DescribeRuntime() << "; world size " << dist.world_size() << std::endl;
}

// Writes the base model folder: config.json, model.safetensors, and the
// tokenizer as tokenizer.json (whatever its file is called) plus
// tokenizer_config.json: `tokenizer_config` if given, else the one next to
// the tokenizer file, if there is one.
Status WriteModelFolder(CausalLm& model, const std::string& dir, const std::string& tokenizer_json,
                        const std::string& tokenizer_config = "") {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Internal("cannot create " + dir + ": " + ec.message());
  TUNE_RETURN_IF_ERROR(WriteSafetensors(dir + "/model.safetensors", model->BaseState(), {{"format", "pt"}}));
  TUNE_RETURN_IF_ERROR(WriteText(dir + "/config.json", ModelConfigToJson(model->config())));
  TUNE_RETURN_IF_ERROR(CopyFileAs(tokenizer_json, dir, "tokenizer.json"));
  if (!tokenizer_config.empty()) return CopyFileAs(tokenizer_config, dir, "tokenizer_config.json");
  const fs::path sibling = fs::path(tokenizer_json).parent_path() / "tokenizer_config.json";
  if (fs::exists(sibling)) TUNE_RETURN_IF_ERROR(CopyFileAs(sibling.string(), dir, "tokenizer_config.json"));
  return Status::Ok();
}

std::string JoinModules(std::vector<std::string> modules) {
  std::sort(modules.begin(), modules.end());
  std::string out;
  for (const auto& m : modules) out += (out.empty() ? "" : ",") + m;
  return out;
}

// A LoRA checkpoint continues only with its own rank and target modules (its
// adapter tensors and AdamW moments have their shapes); alpha, dropout,
// rsLoRA and every loop hyperparameter may change. The checkpoint's
// adapter_config.json says which it was trained with; a folder without one
// is left to the shape checks of the loaders.
Status CheckLoraCheckpoint(const std::string& dir, const LoraConfig& now, bool log) {
  const std::string path = (fs::path(dir) / "adapter_config.json").string();
  if (!fs::exists(path)) return Status::Ok();
  TUNE_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  auto saved = ParseAdapterConfig(text);
  if (!saved.ok()) return Status::InvalidArgument(dir + ": " + saved.status().message());
  if (saved->r != now.r) {
    return Status::InvalidArgument(dir + ": the checkpoint's LoRA rank is " + std::to_string(saved->r) +
                                   ", --lora-r asks " + std::to_string(now.r) +
                                   "; a checkpoint continues only with its own rank");
  }
  const std::string saved_modules = JoinModules(saved->target_modules), now_modules = JoinModules(now.target_modules);
  if (saved_modules != now_modules) {
    return Status::InvalidArgument(dir + ": the checkpoint's LoRA target modules are " + saved_modules +
                                   ", --target-modules asks " + now_modules +
                                   "; a checkpoint continues only with its own target modules");
  }
  if (log && (saved->alpha != now.alpha || saved->dropout != now.dropout || saved->use_rslora != now.use_rslora)) {
    std::ostringstream s;
    s << "lora_train: continuing with LoRA alpha " << now.alpha << ", dropout " << now.dropout
      << (now.use_rslora ? ", rsLoRA" : "") << " (the checkpoint's run had alpha " << saved->alpha << ", dropout "
      << saved->dropout << (saved->use_rslora ? ", rsLoRA" : "") << ")";
    std::cerr << s.str() << std::endl;
  }
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------
int RunFinetune(const FinetuneOptions& o) {
  return Guarded([&]() -> Status {
    LoraConfig lora;
    lora.r = o.lora_r;
    lora.alpha = o.lora_alpha;
    lora.dropout = o.lora_dropout;
    lora.target_modules = SplitModuleList(o.target_modules);
    lora.use_rslora = o.use_rslora;
    TUNE_RETURN_IF_ERROR(lora.Validate());
    TUNE_ASSIGN_OR_RETURN(BaseQuantization quant, ParseBaseQuantization(o.quantize, o.double_quant));
    const int threads = ConfigureThreads(o.loop.threads);
    (void)threads;
    TUNE_ASSIGN_OR_RETURN(Placement place, ResolvePlacement(o.loop.device, o.loop.dtype, o.loop.backend,
                                                            LocalRank(), LocalWorldSize()));
    TUNE_ASSIGN_OR_RETURN(auto dist, Distributed::FromEnv(place.backend, o.loop.dist_timeout_s, place.device));

    TUNE_ASSIGN_OR_RETURN(text::Tokenizer tok, text::Tokenizer::Load(o.base + "/tokenizer.json"));
    text::DataOptions data_opts;
    data_opts.seq_len = static_cast<int>(o.loop.seq_len);
    if (!o.prompt_template.empty()) data_opts.prompt_template = o.prompt_template;
    data_opts.skip_malformed = o.skip_malformed;
    text::DataStats stats;
    TUNE_ASSIGN_OR_RETURN(std::vector<text::Example> train, text::LoadJsonl(o.data, tok, data_opts, &stats));
    if (stats.malformed > 0 || stats.truncated > 0 || stats.no_targets > 0) {
      std::cerr << "lora_train: " << o.data << ": " << stats.lines << " lines, " << stats.malformed
                << " malformed skipped, " << stats.truncated << " truncated to " << o.loop.seq_len << " tokens, "
                << stats.no_targets << " dropped without a target token" << std::endl;
    }
    std::vector<text::Example> eval;
    if (!o.eval_data.empty()) {
      TUNE_ASSIGN_OR_RETURN(eval, text::LoadJsonl(o.eval_data, tok, data_opts));
    } else {
      std::tie(train, eval) = text::SplitEval(std::move(train), o.loop.eval_fraction, o.loop.seed);
    }
    if (o.loop.eval_max_examples > 0 && static_cast<int64_t>(eval.size()) > o.loop.eval_max_examples) {
      eval.resize(o.loop.eval_max_examples);
    }

    torch::manual_seed(o.loop.seed);  // identical adapter init on every rank
    TUNE_ASSIGN_OR_RETURN(CausalLm model, LoadPretrained(o.base, quant, place.dtype));
    TUNE_RETURN_IF_ERROR(CheckVocab(model->config(), tok, o.base));
    const int64_t total = CountBaseParams(model);
    TUNE_RETURN_IF_ERROR(model->ApplyLora(lora));  // on the CPU: the same adapter init on every device
    PlaceModel(model, place);
    model->set_gradient_checkpointing(o.loop.gradient_checkpointing);
    std::vector<torch::Tensor> params = model->LoraParameters();
    torch::manual_seed(o.loop.seed + 1000 * static_cast<uint64_t>(dist->rank()) + 1);  // dropout streams

    LogStart(*dist, "fine-tuning on " + place.Describe() + ": " + o.base + " (" + model->config().model_type + ", " +
                        std::to_string(model->config().num_hidden_layers) + " layers, " +
                        std::to_string(total) + " base parameters, frozen) with LoRA rank " + std::to_string(lora.r) +
                        " on " + o.target_modules + ": " + std::to_string(CountParams(params)) +
                        " trainable parameters; " + std::to_string(train.size()) + " training and " +
                        std::to_string(eval.size()) + " eval examples" + DescribeQuantization(model, quant));

    const std::string adapter_config = AdapterConfigJson(lora, fs::absolute(o.base).lexically_normal().string());
    TrainHooks hooks;
    hooks.weights = [&] { return model->AdapterState(); };
    hooks.load_weights = [&](const TensorMap& w) { return model->LoadAdapter(w); };
    hooks.check_checkpoint = [&](const std::string& dir) { return CheckLoraCheckpoint(dir, lora, dist->is_main()); };
    hooks.weights_file = "adapter_model.safetensors";
    hooks.extra_files = {{"adapter_config.json", adapter_config}};
    hooks.write_final = [&](const std::string& out) -> Status {
      TUNE_RETURN_IF_ERROR(WriteSafetensors(out + "/adapter_model.safetensors", model->AdapterState(),
                                            {{"format", "pt"}}));
      return WriteText(out + "/adapter_config.json", adapter_config);
    };
    return RunTrainLoop(model, params, train, eval, o.loop, PadId(tok), *dist, hooks);
  });
}

int RunPretrain(const PretrainOptions& o) {
  return Guarded([&]() -> Status {
    ConfigureThreads(o.loop.threads);
    TUNE_ASSIGN_OR_RETURN(Placement place, ResolvePlacement(o.loop.device, o.loop.dtype, o.loop.backend,
                                                            LocalRank(), LocalWorldSize()));
    if (place.dtype != torch::kFloat32) {
      return Status::InvalidArgument("--dtype " + o.loop.dtype + ": pretrain trains every weight, which stay fp32; "
                                     "a lower-precision base is for LoRA fine-tuning only");
    }
    TUNE_ASSIGN_OR_RETURN(auto dist, Distributed::FromEnv(place.backend, o.loop.dist_timeout_s, place.device));
    const std::string tokenizer_json = o.base + "/tokenizer.json";
    TUNE_ASSIGN_OR_RETURN(text::Tokenizer tok, text::Tokenizer::Load(tokenizer_json));
    TUNE_ASSIGN_OR_RETURN(std::vector<text::Example> all,
                          text::LoadCorpus(o.corpus, tok, static_cast<int>(o.loop.seq_len)));
    auto [train, eval] = text::SplitEval(std::move(all), o.loop.eval_fraction, o.loop.seed);
    if (o.loop.eval_max_examples > 0 && static_cast<int64_t>(eval.size()) > o.loop.eval_max_examples) {
      eval.resize(o.loop.eval_max_examples);
    }
    torch::manual_seed(o.loop.seed);
    TUNE_ASSIGN_OR_RETURN(CausalLm model, LoadPretrained(o.base));
    TUNE_RETURN_IF_ERROR(CheckVocab(model->config(), tok, o.base));
    PlaceModel(model, place);
    model->set_gradient_checkpointing(o.loop.gradient_checkpointing);
    std::vector<torch::Tensor> params = model->parameters();
    const std::string out_dir = o.out.empty() ? o.base : o.out;
    LoopOptions loop = o.loop;
    if (loop.output.empty()) loop.output = out_dir + "/pretrain_checkpoints";
    LogStart(*dist, "pretraining on " + place.Describe() + ": " + o.base + " (" + std::to_string(CountParams(params)) + " parameters) on " +
                        o.corpus + ": " + std::to_string(train.size()) + " training and " +
                        std::to_string(eval.size()) + " eval chunks of up to " + std::to_string(o.loop.seq_len) +
                        " tokens");
    TrainHooks hooks;
    hooks.weights = [&] { return model->BaseState(); };
    hooks.load_weights = [&](const TensorMap& w) { return model->LoadBase(w); };
    hooks.weights_file = "model.safetensors";
    hooks.write_final = [&](const std::string& checkpoints) -> Status {
      TUNE_RETURN_IF_ERROR(WriteModelFolder(model, out_dir, tokenizer_json));
      std::error_code ec;
      if (o.loop.output.empty()) fs::remove_all(checkpoints, ec);  // the model folder is the result
      return Status::Ok();
    };
    return RunTrainLoop(model, params, train, eval, loop, PadId(tok), *dist, hooks);
  });
}

int RunInit(const InitOptions& o) {
  return Guarded([&]() -> Status {
    TUNE_ASSIGN_OR_RETURN(text::Tokenizer tok, text::Tokenizer::Load(o.tokenizer));
    if (!o.tokenizer_config.empty() && !fs::is_regular_file(o.tokenizer_config)) {
      return Status::NotFound(o.tokenizer_config + ": --tokenizer-config: no such file");
    }
    TUNE_ASSIGN_OR_RETURN(std::string config_text, ReadText(o.config));
    // vocab_size absent or 0: exactly the tokenizer's.
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(config_text);
    } catch (const nlohmann::json::exception& e) {
      return Status::InvalidArgument(o.config + ": not valid JSON: " + e.what());
    }
    if (j.is_object() && (!j.contains("vocab_size") || j["vocab_size"] == 0)) j["vocab_size"] = tok.vocab_size();
    auto parsed = ParseModelConfig(j.dump());
    if (!parsed.ok()) return Status(parsed.status().code(), o.config + ": " + parsed.status().message());
    ModelConfig config = *parsed;
    TUNE_RETURN_IF_ERROR(CheckVocab(config, tok, o.config));
    if (config.eos_token_id < 0 && tok.eos_id()) config.eos_token_id = *tok.eos_id();
    if (config.bos_token_id < 0 && tok.bos_id()) config.bos_token_id = *tok.bos_id();
    torch::manual_seed(o.seed);
    CausalLm model(config);
    TUNE_RETURN_IF_ERROR(WriteModelFolder(model, o.out, o.tokenizer, o.tokenizer_config));
    std::cerr << "lora_train: wrote a random " << config.model_type << " base with "
              << CountParams(model->parameters()) << " parameters to " << o.out << std::endl;
    return Status::Ok();
  });
}

int RunLogits(const LogitsOptions& o) {
  return Guarded([&]() -> Status {
    ConfigureThreads(1);
    TUNE_ASSIGN_OR_RETURN(BaseQuantization quant, ParseBaseQuantization(o.quantize, o.double_quant));
    TUNE_ASSIGN_OR_RETURN(text::Tokenizer tok, text::Tokenizer::Load(o.base + "/tokenizer.json"));
    TUNE_ASSIGN_OR_RETURN(CausalLm model, LoadPretrained(o.base, quant));
    model->eval();
    torch::NoGradGuard no_grad;
    std::vector<int32_t> ids32 = tok.Encode(o.text, false);
    if (ids32.empty()) return Status::InvalidArgument("--text encodes to no tokens");
    torch::Tensor ids = torch::tensor(std::vector<int64_t>(ids32.begin(), ids32.end()), torch::kInt64).unsqueeze(0);
    TensorMap out{{"input_ids", ids}, {"base_logits", model->forward(ids).contiguous()}};
    torch::Tensor logits = out["base_logits"];
    if (!o.adapter.empty()) {
      TUNE_ASSIGN_OR_RETURN(std::string cfg_text, ReadText(o.adapter + "/adapter_config.json"));
      TUNE_ASSIGN_OR_RETURN(LoraConfig lora, ParseAdapterConfig(cfg_text));
      TUNE_RETURN_IF_ERROR(model->ApplyLora(lora));
      TUNE_ASSIGN_OR_RETURN(TensorMap adapter, ReadSafetensors(o.adapter + "/adapter_model.safetensors"));
      TUNE_RETURN_IF_ERROR(model->LoadAdapter(adapter));
      model->eval();
      logits = model->forward(ids).contiguous();
    }
    out["logits"] = logits;
    return WriteSafetensors(o.out, out);
  });
}

}  // namespace tune
