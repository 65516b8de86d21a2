#include "trainer/model.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "trainer/checkpointing.h"

namespace tune {
namespace {

std::string ShapeString(torch::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// The module's own name in its parent ("model.layers.0.self_attn.q_proj" ->
// "q_proj").
std::string LeafName(const std::string& qualified) {
  auto dot = qualified.rfind('.');
  return dot == std::string::npos ? qualified : qualified.substr(dot + 1);
}

constexpr char kPeftPrefix[] = "base_model.model.";

}  // namespace

// ---------------------------------------------------------------------------
ProjectionImpl::ProjectionImpl(int64_t in_features, int64_t out_features, bool has_bias, bool float_weight)
    : in_features_(in_features), out_features_(out_features) {
  weight = register_parameter("weight", float_weight ? torch::empty({out_features, in_features}) : torch::empty({0}));
  if (has_bias) bias = register_parameter("bias", torch::zeros({out_features}));
}

void ProjectionImpl::Quantize(const BaseQuantization& q, torch::ScalarType dtype) {
  Quantize(weight, q, dtype);
  weight.set_data(torch::empty({0}, weight.options()));  // the full-precision copy goes
}

void ProjectionImpl::Quantize(const torch::Tensor& w, const BaseQuantization& q, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  TUNE_CHECK(!weight_4bit_ && w.sizes() == torch::IntArrayRef({out_features_, in_features_}));
  // Through float32 first, as a weight loaded into the float model and then
  // quantized (QuantizeBase): the same bits from any file dtype.
  weight_4bit_ =
      register_module("weight_4bit", Frozen4bitWeight(w.to(torch::kFloat32).to(dtype), q.type, q.double_quant));
}

torch::Tensor ProjectionImpl::forward(const torch::Tensor& x) {
  TUNE_CHECK(weight_4bit_ || weight.numel() > 0);  // a projection built without its float weight was never loaded
  torch::Tensor y = weight_4bit_ ? weight_4bit_->Linear(x, bias) : torch::nn::functional::linear(x, weight, bias);
  if (!lora_a_) return y;
  // As PEFT over a bf16 base: the adapter computes in its own fp32 and the
  // sum returns to the base's dtype.
  const auto lora_dtype = lora_a_->weight.scalar_type();
  torch::Tensor h = x.scalar_type() == lora_dtype ? x : x.to(lora_dtype);
  if (dropout_ > 0.0) h = torch::dropout(h, dropout_, is_training());
  torch::Tensor out = y + lora_b_(lora_a_(h)) * scaling_;
  return out.scalar_type() == y.scalar_type() ? out : out.to(y.scalar_type());
}

void ProjectionImpl::AddLora(int64_t r, double scaling, double dropout) {
  const int64_t out = out_features_, in = in_features_;
  lora_a_ = register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(in, r).bias(false)));
  lora_b_ = register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(r, out).bias(false)));
  torch::NoGradGuard no_grad;
  const auto fp32 = weight.options().dtype(torch::kFloat32);  // adapters train in fp32 over any base dtype
  lora_a_->weight.set_data(torch::empty({r, in}, fp32));
  lora_b_->weight.set_data(torch::zeros({out, r}, fp32));
  torch::nn::init::kaiming_uniform_(lora_a_->weight, std::sqrt(5.0));
  scaling_ = scaling;
  dropout_ = dropout;
}

RmsNormImpl::RmsNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * h.to(x.scalar_type());
}

// ---------------------------------------------------------------------------
namespace {
// [..., hd] -> cat(-x[..., hd/2:], x[..., :hd/2])
torch::Tensor RotateHalf(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}
}  // namespace

AttentionImpl::AttentionImpl(const ModelConfig& c, bool float_projections)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
  // Llama / Qwen3 attention_bias: all four; Qwen2: q/k/v only; Mistral: none.
  const bool qkv_bias = HasQkvBias(c);
  const bool o_bias = HasOutputBias(c);
  q_proj = register_module("q_proj", Projection(c.hidden_size, heads_ * head_dim_, qkv_bias, float_projections));
  k_proj = register_module("k_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, qkv_bias, float_projections));
  v_proj = register_module("v_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, qkv_bias, float_projections));
  o_proj = register_module("o_proj", Projection(heads_ * head_dim_, c.hidden_size, o_bias, float_projections));
  if (HasQkNorm(c)) {
    q_norm = register_module("q_norm", RmsNorm(head_dim_, c.rms_norm_eps));
    k_norm = register_module("k_norm", RmsNorm(head_dim_, c.rms_norm_eps));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1);
  // q: [B, H, T, hd]; k, v: [B, KV, T, hd]
  torch::Tensor q = q_proj(x).view({B, T, heads_, head_dim_});
  torch::Tensor k = k_proj(x).view({B, T, kv_heads_, head_dim_});
  if (q_norm) {  // Qwen3: RMSNorm over each head's vector, before RoPE
    q = q_norm(q);
    k = k_norm(k);
  }
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  torch::Tensor v = v_proj(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
  q = q * cos + RotateHalf(q) * sin;
  k = k * cos + RotateHalf(k) * sin;
  if (kv_heads_ != heads_) {  // GQA: each kv head serves heads/kv_heads query heads
    const int64_t rep = heads_ / kv_heads_;
    k = k.unsqueeze(2).expand({B, kv_heads_, rep, T, head_dim_}).reshape({B, heads_, T, head_dim_});
    v = v.unsqueeze(2).expand({B, kv_heads_, rep, T, head_dim_}).reshape({B, heads_, T, head_dim_});
  }
  // att: [B, H, T, T] = mask + scale * q k^T in one batched GEMM (baddbmm
  // broadcasts the [T, T] mask), which saves two passes over att forward and
  // backward against matmul, mul, add; softmax in float32 as transformers'
  // eager attention.
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  torch::Tensor att = torch::baddbmm(mask, q.reshape({B * heads_, T, head_dim_}),
                                     k.reshape({B * heads_, T, head_dim_}).transpose(1, 2), /*beta=*/1.0,
                                     /*alpha=*/scale)
                          .view({B, heads_, T, T});
  att = torch::softmax(att, -1, torch::kFloat32).to(q.scalar_type());
  torch::Tensor y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, heads_ * head_dim_});
  return o_proj(y);
}

MlpImpl::MlpImpl(const ModelConfig& c, bool float_projections) {
  gate_proj = register_module("gate_proj", Projection(c.hidden_size, c.intermediate_size, c.mlp_bias, float_projections));
  up_proj = register_module("up_proj", Projection(c.hidden_size, c.intermediate_size, c.mlp_bias, float_projections));
  down_proj = register_module("down_proj", Projection(c.intermediate_size, c.hidden_size, c.mlp_bias, float_projections));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, bool float_projections) {
  input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
  self_attn = register_module("self_attn", Attention(c, float_projections));
  post_attention_layernorm = register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
  mlp = register_module("mlp", Mlp(c, float_projections));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const torch::Tensor& mask) {
  torch::Tensor h = x + self_attn(input_layernorm(x), cos, sin, mask);
  return h + mlp(post_attention_layernorm(h));
}

BackboneImpl::BackboneImpl(const ModelConfig& c, bool float_projections) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, float_projections));
  norm = register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps));
}

// ---------------------------------------------------------------------------
CausalLmImpl::CausalLmImpl(ModelConfig config) : config_(std::move(config)), rope_(config_) {
  model = register_module("model", Backbone(config_));
  if (!config_.tie_word_embeddings) {
    lm_head_ = register_module("lm_head", Projection(config_.hidden_size, config_.vocab_size, false));
  }
  InitWeights();
}

CausalLmImpl::CausalLmImpl(ModelConfig config, const BaseQuantization& quant, torch::ScalarType dtype)
    : config_(std::move(config)), pending_quant_(quant), pending_dtype_(dtype), rope_(config_) {
  model = register_module("model", Backbone(config_, /*float_projections=*/!quant.on));
  if (!config_.tie_word_embeddings) {
    lm_head_ = register_module("lm_head", Projection(config_.hidden_size, config_.vocab_size, false));
  }
}

void CausalLmImpl::EnsureMasks(int64_t length, const torch::Device& device) {
  if (mask_.defined() && mask_.size(0) >= length && mask_.device() == device) return;
  const int64_t L = std::max<int64_t>(length, 64);
  const float inf = std::numeric_limits<float>::infinity();
  mask_ = torch::full({L, L}, -inf).triu(1).to(device);
  sliding_mask_ = torch::Tensor();
  if (config_.sliding_window > 0) {
    // transformers' sliding_window_overlay: key k is visible from query q when
    // q - W < k <= q, i.e. the W latest positions, q itself included.
    sliding_mask_ = (mask_ + torch::full({L, L}, -inf).tril(-config_.sliding_window).to(device)).contiguous();
  }
}

torch::Tensor CausalLmImpl::forward(const torch::Tensor& ids) { return Head(Hidden(ids)); }

torch::Tensor CausalLmImpl::Hidden(const torch::Tensor& ids) {
  const int64_t T = ids.size(1);
  torch::Tensor cos, sin;
  rope_.Tables(T, ids.device(), &cos, &sin);
  EnsureMasks(T, ids.device());
  torch::Tensor mask = mask_.slice(0, 0, T).slice(1, 0, T);
  torch::Tensor sliding = sliding_mask_.defined() ? sliding_mask_.slice(0, 0, T).slice(1, 0, T) : mask;
  torch::Tensor x = model->embed_tokens(ids);
  if (x.scalar_type() != cos.scalar_type()) {  // a bf16 base: RoPE tables and masks in its dtype, as transformers
    cos = cos.to(x.scalar_type());
    sin = sin.to(x.scalar_type());
    mask = mask.to(x.scalar_type());
    sliding = sliding.to(x.scalar_type());
  }
  const bool recompute = gradient_checkpointing_ && is_training() && torch::GradMode::is_enabled();
  size_t i = 0;
  for (const auto& layer : *model->layers) {
    const bool slides = i < config_.layer_sliding.size() && config_.layer_sliding[i];
    const torch::Tensor& m = slides ? sliding : mask;
    auto* l = layer->as<DecoderLayer>();
    x = recompute ? CheckpointedLayer(l, x, cos, sin, m) : l->forward(x, cos, sin, m);
    ++i;
  }
  return model->norm(x);
}

torch::Tensor CausalLmImpl::Head(const torch::Tensor& hidden) {
  const torch::Tensor& head = lm_head_ ? lm_head_->weight : model->embed_tokens->weight;
  return torch::nn::functional::linear(hidden, head);
}

torch::Tensor CausalLmImpl::TargetLossSum(const torch::Tensor& ids, const torch::Tensor& labels) {
  torch::Tensor h = Hidden(ids);
  const int64_t H = h.size(-1);
  torch::Tensor next = labels.slice(1, 1).reshape({-1});
  torch::Tensor keep = next.ne(-100).nonzero().reshape({-1});
  torch::Tensor rows = h.slice(1, 0, -1).reshape({-1, H}).index_select(0, keep);
  return torch::nn::functional::cross_entropy(
      Head(rows).to(torch::kFloat32), next.index_select(0, keep),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

torch::Tensor CausalLmImpl::Loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  const int64_t V = logits.size(-1);
  torch::Tensor shift_logits = logits.slice(1, 0, -1).reshape({-1, V});
  torch::Tensor shift_labels = labels.slice(1, 1).reshape({-1});
  return torch::nn::functional::cross_entropy(
      shift_logits.to(torch::kFloat32), shift_labels,
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
}

void CausalLmImpl::InitWeights() {
  torch::NoGradGuard no_grad;
  const double std = config_.initializer_range;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.find("lora_") != std::string::npos) continue;
    if (name.find("norm") != std::string::npos) {
      p.fill_(1.0);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      p.zero_();
    } else {
      p.normal_(0.0, std);
    }
  }
}

namespace {

// A contiguous [shape] view of the first elements of `*buffer` (of `dtype`),
// which grows to `max_numel` elements the first time.
torch::Tensor ScratchView(torch::Tensor* buffer, torch::ScalarType dtype, int64_t max_numel,
                          const std::vector<int64_t>& shape) {
  if (!buffer->defined()) *buffer = torch::empty({max_numel}, torch::TensorOptions().dtype(dtype));
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return buffer->narrow(0, 0, n).view(shape);
}

}  // namespace

// Both LoadBase()s: `describe` gives a tensor's shape and dtype (false when
// absent), `read_into` copies it into a CPU tensor of its shape.
template <typename Describe, typename ReadInto>
Status CausalLmImpl::LoadBaseWith(const Describe& describe, const ReadInto& read_into) {
  torch::NoGradGuard no_grad;
  // The projections built without their float weight, by weight name.
  std::map<std::string, std::shared_ptr<ProjectionImpl>> pending;
  int64_t largest = 0;
  if (pending_quant_.on) {
    for (auto& item : named_modules()) {
      auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
      if (!proj || proj->quantized() || proj->weight.numel() != 0) continue;
      pending[item.key() + ".weight"] = proj;
      largest = std::max(largest, proj->in_features() * proj->out_features());
    }
  }
  // A pending projection's weight is read into scratch buffers that every
  // projection reuses, as read (file dtype), as float32, and rounded through
  // the compute dtype: memory allocated afresh for each would sit between the
  // 4-bit buffers made in the meantime, and with lora_train's malloc
  // settings (trainer/runtime_info.cc: freed heap memory is kept) the heap
  // would keep every hole (250 MiB on a 106M-parameter model).
  torch::Tensor file_buffer, f32_buffer, dtype_buffer;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    if (name.find("lora_") != std::string::npos) continue;
    std::vector<int64_t> shape;
    torch::ScalarType dtype = torch::kFloat32;
    if (!describe(name, &shape, &dtype)) {
      return Status::InvalidArgument("missing tensor '" + name + "' in the model weights");
    }
    if (!torch::isFloatingType(dtype)) {
      return Status::InvalidArgument("tensor '" + name + "' is not a floating-point tensor");
    }
    auto p = pending.find(name);
    const std::vector<int64_t> want =
        p != pending.end() ? std::vector<int64_t>{p->second->out_features(), p->second->in_features()}
                           : item.value().sizes().vec();
    if (shape != want) {
      return Status::InvalidArgument("tensor '" + name + "' has shape " + ShapeString(shape) +
                                     " in the weights but the config implies " + ShapeString(want));
    }
    if (p == pending.end()) {
      TUNE_RETURN_IF_ERROR(read_into(name, item.value()));
      continue;
    }
    // The values QuantizeBase quantizes: the weight in float32 (as the float
    // model holds it), cast to the compute dtype, read back as float32.
    torch::Tensor w = ScratchView(&f32_buffer, torch::kFloat32, largest, shape);
    if (dtype == torch::kFloat32) {
      TUNE_RETURN_IF_ERROR(read_into(name, w));
    } else {
      torch::Tensor raw = ScratchView(&file_buffer, dtype, largest, shape);
      TUNE_RETURN_IF_ERROR(read_into(name, raw));
      w.copy_(raw);
    }
    if (pending_dtype_ != torch::kFloat32) {
      torch::Tensor rounded = ScratchView(&dtype_buffer, pending_dtype_, largest, shape);
      rounded.copy_(w);
      w.copy_(rounded);
    }
    p->second->Quantize(w, pending_quant_, torch::kFloat32);
  }
  return Status::Ok();
}

Status CausalLmImpl::LoadBase(const TensorMap& weights) {
  return LoadBaseWith(
      [&](const std::string& name, std::vector<int64_t>* shape, torch::ScalarType* dtype) {
        auto it = weights.find(name);
        if (it == weights.end()) return false;
        *shape = it->second.sizes().vec();
        *dtype = it->second.scalar_type();
        return true;
      },
      [&](const std::string& name, torch::Tensor dst) {
        dst.copy_(weights.at(name));
        return Status::Ok();
      });
}

Status CausalLmImpl::LoadBase(const ModelWeightsReader& reader) {
  return LoadBaseWith(
      [&](const std::string& name, std::vector<int64_t>* shape, torch::ScalarType* dtype) {
        return reader.Describe(name, shape, dtype);
      },
      [&](const std::string& name, torch::Tensor dst) { return reader.ReadInto(name, dst); });
}

TensorMap CausalLmImpl::BaseState() {
  TensorMap out;
  for (auto& item : named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) continue;
    out[item.key()] = item.value().detach().to(torch::kCPU, torch::kFloat32).clone();
  }
  return out;
}

int64_t CausalLmImpl::QuantizeBase(const BaseQuantization& q, torch::ScalarType dtype, int64_t* full_bytes) {
  int64_t bytes = 0, full = 0;
  for (auto& item : named_modules()) {
    auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
    if (!proj || proj->quantized() || item.key().rfind("model.layers.", 0) != 0) continue;
    full += proj->in_features() * proj->out_features() * 4;
    proj->Quantize(q, dtype);
    bytes += proj->quantized_bytes();
  }
  if (full_bytes) *full_bytes = full;
  return bytes;
}

Status CausalLmImpl::ApplyLora(const LoraConfig& lora) {
  TUNE_RETURN_IF_ERROR(lora.Validate());
  for (auto& p : parameters()) p.requires_grad_(false);
  const std::set<std::string> targets(lora.target_modules.begin(), lora.target_modules.end());
  int wrapped = 0;
  for (auto& item : named_modules()) {
    auto proj = std::dynamic_pointer_cast<ProjectionImpl>(item.value());
    if (!proj || proj->has_lora() || !targets.count(LeafName(item.key()))) continue;
    proj->AddLora(lora.r, lora.Scaling(), lora.dropout);
    ++wrapped;
  }
  if (wrapped == 0) return Status::InvalidArgument("no module matched --target-modules");
  return Status::Ok();
}

std::vector<torch::Tensor> CausalLmImpl::LoraParameters() {
  std::vector<torch::Tensor> out;
  for (auto& item : named_parameters()) {
    if (item.key().find("lora_") != std::string::npos) out.push_back(item.value());
  }
  return out;
}

TensorMap CausalLmImpl::AdapterState() {
  TensorMap out;
  for (auto& item : named_parameters()) {
    if (item.key().find("lora_") == std::string::npos) continue;
    out[kPeftPrefix + item.key()] = item.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
  }
  return out;
}

Status CausalLmImpl::LoadAdapter(const TensorMap& adapter) {
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    if (item.key().find("lora_") == std::string::npos) continue;
    const std::string key = kPeftPrefix + item.key();
    auto it = adapter.find(key);
    if (it == adapter.end()) return Status::InvalidArgument("missing adapter tensor '" + key + "'");
    if (it->second.sizes() != item.value().sizes()) {
      return Status::InvalidArgument("adapter tensor '" + key + "' has shape " + ShapeString(it->second.sizes()) +
                                     ", expected " + ShapeString(item.value().sizes()));
    }
    item.value().copy_(it->second);
  }
  return Status::Ok();
}

Result<CausalLm> LoadPretrained(const std::string& dir, const BaseQuantization& quant, torch::ScalarType dtype) {
  TUNE_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir + "/config.json"));
  TUNE_ASSIGN_OR_RETURN(ModelWeightsReader weights, ModelWeightsReader::Open(dir));
  for (const std::string& name : weights.names()) {
    if (name.find(".quant_state.") != std::string::npos || name.find(".quant_map") != std::string::npos) {
      return Status::InvalidArgument(dir + ": '" + name + "' shows a checkpoint saved in 4-bit by bitsandbytes, "
                                     "which lora_train does not load: give it the float checkpoint and --quantize");
    }
  }
  CausalLm lm(config, quant, dtype);
  Status st = lm->LoadBase(weights);
  if (!st.ok()) return Status(st.code(), dir + ": " + st.message());
  return lm;
}

}  // namespace tune
