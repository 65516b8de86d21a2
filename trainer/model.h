// Decoder-only causal language model in the Llama / Mistral / Qwen2 / Qwen3
// layout (trainer/model_config.h says which parts each type has), with
// optional LoRA adapters on its projections (PEFT semantics).
//
// Parameter names are exactly Hugging Face's (model.embed_tokens.weight,
// model.layers.N.self_attn.q_proj.weight, ..., lm_head.weight), so
// named_parameters() is the checkpoint's key set. Adapter parameters are
// named ...q_proj.lora_A.weight / lora_B.weight; AdapterState() prefixes them
// with "base_model.model." as PEFT saves them.
//
// Only trainer translation units include this header (it pulls in libtorch).
// Not thread-safe: one training loop owns a model.
#pragma once

#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"
#include "trainer/lora_config.h"
#include "trainer/model_config.h"
#include "trainer/quant_linear.h"
#include "trainer/rope.h"
#include "trainer/safetensors.h"

namespace tune {

// ---------------------------------------------------------------------------
// A linear projection y = x W^T (+ b), optionally with a LoRA adapter:
// y += scaling * B(A(dropout(x))). A: [r, in], B: [out, r].
class ProjectionImpl : public torch::nn::Module {
 public:
  // With `float_weight` false, `weight` is an empty tensor from the start
  // and the projection computes nothing until Quantize(w, ...) gives it its
  // 4-bit weight: a loader that quantizes as it reads never holds the float
  // weight in the model.
  ProjectionImpl(int64_t in_features, int64_t out_features, bool bias, bool float_weight = true);
  torch::Tensor forward(const torch::Tensor& x);
  // Adds lora_A / lora_B (A Kaiming-uniform with a = sqrt(5), B zeros).
  void AddLora(int64_t r, double scaling, double dropout);
  bool has_lora() const { return static_cast<bool>(lora_a_); }
  // Replaces the weight by its 4-bit form (trainer/quant_linear.h), made
  // from the weight in `dtype`; `weight` becomes an empty tensor.
  void Quantize(const BaseQuantization& q, torch::ScalarType dtype);
  // The same from `w` [out, in] (any float dtype, CPU), which the projection
  // does not keep: cast to float32, then to `dtype`, then quantized.
  void Quantize(const torch::Tensor& w, const BaseQuantization& q, torch::ScalarType dtype);
  bool quantized() const { return static_cast<bool>(weight_4bit_); }
  int64_t quantized_bytes() const { return weight_4bit_ ? weight_4bit_->bytes() : 0; }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  torch::Tensor weight;
  torch::Tensor bias;  // undefined when there is none

 private:
  int64_t in_features_, out_features_;
  Frozen4bitWeight weight_4bit_{nullptr};
  torch::nn::Linear lora_a_{nullptr};
  torch::nn::Linear lora_b_{nullptr};
  double scaling_ = 0.0;
  double dropout_ = 0.0;
};
TORCH_MODULE(Projection);

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // [..., dim] -> same
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& c, bool float_projections = true);
  // x: [B, T, D]; cos/sin: [T, head_dim]; mask: [T, T] additive (0 / -inf).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask);
  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RmsNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen3: per-head RMSNorm before RoPE; else null

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& c, bool float_projections = true);
  torch::Tensor forward(const torch::Tensor& x);  // SwiGLU: down(silu(gate(x)) * up(x))
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& c, bool float_projections = true);
  // mask: [T, T] additive, causal (and windowed on a sliding layer).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask);
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(DecoderLayer);

// "model": embeddings, layers, final norm.
class BackboneImpl : public torch::nn::Module {
 public:
  // float_projections false: the decoder projections without float weights (ProjectionImpl).
  explicit BackboneImpl(const ModelConfig& c, bool float_projections = true);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RmsNorm norm{nullptr};
};
TORCH_MODULE(Backbone);

// ---------------------------------------------------------------------------
class CausalLmImpl : public torch::nn::Module {
 public:
  // Random init (InitWeights).
  explicit CausalLmImpl(ModelConfig config);
  // The model a loader fills (LoadPretrained): no random init, and with
  // `quant` on every decoder projection is built without its float weight
  // (ProjectionImpl's float_weight false), to be quantized from `dtype` as
  // LoadBase(reader) reads it. Every parameter is uninitialised until then.
  CausalLmImpl(ModelConfig config, const BaseQuantization& quant, torch::ScalarType dtype);

  // ids: [B, T] int64 -> logits [B, T, vocab]. Positions are 0 .. T - 1.
  // Head(Hidden(ids)).
  torch::Tensor forward(const torch::Tensor& ids);
  // ids: [B, T] -> the final norm's output [B, T, hidden].
  torch::Tensor Hidden(const torch::Tensor& ids);
  // hidden: [..., hidden] -> logits [..., vocab], through lm_head or the tied
  // embedding.
  torch::Tensor Head(const torch::Tensor& hidden);
  // Mean cross-entropy of logits[:, t] against labels[:, t + 1] over labels
  // that are not -100 (Hugging Face's causal-LM loss).
  static torch::Tensor Loss(const torch::Tensor& logits, const torch::Tensor& labels);
  // The token-summed cross-entropy, in float32, of the prediction at every
  // position t whose label labels[:, t + 1] is not -100: the sum that
  // Loss() averages. The head runs on those positions only, so prompt and
  // padding positions cost no vocab-sized matmul (on a 135M model the head
  // is a fifth of the forward's multiply-adds). The training loop and the
  // evaluation use it.
  torch::Tensor TargetLossSum(const torch::Tensor& ids, const torch::Tensor& labels);

  // Random init as transformers does: normal(0, initializer_range) for
  // linear and embedding weights, zeros for biases, ones for norms.
  void InitWeights();
  // Copies `weights` (any float dtype) into the base parameters. Non-OK
  // names the missing tensor or the shape mismatch; extra tensors are ignored.
  Status LoadBase(const TensorMap& weights);
  // The same, one tensor at a time from `reader`; a decoder projection built
  // without its float weight is quantized from the tensor just read into a
  // scratch buffer that the next projection reuses. Memory beyond the model:
  // that buffer (the largest projection, in float32 and in the file's and
  // compute dtypes when they differ) and, for a float parameter whose dtype
  // differs from the file's, that tensor as read.
  Status LoadBase(const ModelWeightsReader& reader);
  // The base parameters with their Hugging Face names (lm_head.weight absent
  // when tied), as float32 CPU tensors.
  TensorMap BaseState();

  // Quantizes every decoder projection (q/k/v/o, gate/up/down; not the
  // embeddings, not lm_head) to 4 bits, as transformers does with a
  // BitsAndBytesConfig (docs/trainer-models.md, "QLoRA"); the weights are
  // first cast to `dtype` (transformers' torch_dtype). Returns the bytes
  // the quantized weights hold and, in `full_bytes`, what they held in
  // float32.
  int64_t QuantizeBase(const BaseQuantization& q, torch::ScalarType dtype, int64_t* full_bytes = nullptr);

  // Freezes every base parameter and wraps every target projection with a
  // LoRA adapter. Non-OK when the config is invalid.
  Status ApplyLora(const LoraConfig& lora);
  std::vector<torch::Tensor> LoraParameters();
  // PEFT-keyed adapter weights: base_model.model.<name>.lora_A.weight, ...
  TensorMap AdapterState();
  // Inverse of AdapterState(); every adapter tensor must be present.
  Status LoadAdapter(const TensorMap& adapter);

  const ModelConfig& config() const { return config_; }
  // While training with grad enabled, recompute each decoder layer's
  // activations in the backward pass instead of keeping them
  // (trainer/checkpointing.h): less memory for long sequences, the same
  // gradients.
  void set_gradient_checkpointing(bool on) { gradient_checkpointing_ = on; }
  Backbone model{nullptr};

 private:
  template <typename Describe, typename ReadInto>
  Status LoadBaseWith(const Describe& describe, const ReadInto& read_into);
  // The causal mask [T, T] and, with a window, the sliding one (cached).
  void EnsureMasks(int64_t length, const torch::Device& device);

  ModelConfig config_;
  BaseQuantization pending_quant_;  // a loader's model: what LoadBase quantizes the projections to
  torch::ScalarType pending_dtype_ = torch::kFloat32;
  Projection lm_head_{nullptr};  // null when tied to the embeddings
  RotaryEmbedding rope_;
  torch::Tensor mask_, sliding_mask_;  // caches: [L, L]
  bool gradient_checkpointing_ = false;
};
TORCH_MODULE(CausalLm);

// Reads a Hugging Face model folder (config.json + safetensors weights), one
// tensor at a time (ModelWeightsReader); with `quant` on, quantizes each
// decoder projection as it is read, from its weight cast to `dtype` (the
// same bits as QuantizeBase on the float model), so neither the float model
// nor more than one float projection is ever held. A checkpoint saved in
// 4-bit (uint8 weights with quant_state tensors) is refused.
Result<CausalLm> LoadPretrained(const std::string& dir, const BaseQuantization& quant = {},
                                torch::ScalarType dtype = torch::kFloat32);

}  // namespace tune
