#include "trainer/config_keys.h"

#include <sstream>

#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;
constexpr KeyHandling kImpl = KeyHandling::kImplemented;
constexpr KeyHandling kOne = KeyHandling::kOneValue;
constexpr KeyHandling kIgn = KeyHandling::kIgnored;

bool Listed(const char* list, const std::string& model_type) {
  if (list[0] == '\0') return true;
  std::istringstream in(list);
  std::string t;
  while (in >> t) {
    if (t == model_type) return true;
  }
  return false;
}

bool Neutral(const json& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number()) return v.get<double>() == 0.0;
  if (v.is_array() || v.is_object() || v.is_string()) return v.empty();
  return false;
}

}  // namespace

const std::vector<ConfigKey>& KnownConfigKeys() {
  static const std::vector<ConfigKey> keys = {
      // The architecture.
      {"model_type", kImpl, "", "", "llama, mistral, qwen2 or qwen3; anything else is refused"},
      {"architectures", kIgn, "", "", "informational; model_type decides the layout"},
      {"vocab_size", kImpl, "", "", "embedding and head rows"},
      {"hidden_size", kImpl, "", "", "model width"},
      {"intermediate_size", kImpl, "", "", "MLP width"},
      {"num_hidden_layers", kImpl, "", "", "decoder layers"},
      {"num_attention_heads", kImpl, "", "", "query heads"},
      {"num_key_value_heads", kImpl, "", "", "grouped-query attention; defaults to num_attention_heads"},
      {"head_dim", kImpl, "", "", "per-head width; defaults to hidden_size / num_attention_heads"},
      {"hidden_act", kOne, "", "\"silu\"", "the SwiGLU MLP's activation"},
      {"rms_norm_eps", kImpl, "", "", "every RMSNorm (and Qwen3's q_norm / k_norm)"},
      {"tie_word_embeddings", kImpl, "", "", "lm_head shares embed_tokens.weight"},
      {"attention_bias", kImpl, "llama qwen3", "",
       "biases on q/k/v/o_proj (Qwen2 always has q/k/v biases and no o_proj bias; Mistral none)"},
      {"mlp_bias", kImpl, "llama", "", "biases on gate/up/down_proj"},
      {"attention_dropout", kOne, "", "0", "dropout on attention probabilities while training"},
      {"pretraining_tp", kIgn, "", "",
       "transformers 4.x split the projections into slices with the same result; 5.x ignores it"},
      {"initializer_range", kImpl, "", "", "std of the random init of `lora_train init`; no effect on a loaded model"},
      // Positions.
      {"max_position_embeddings", kImpl, "", "",
       "the dynamic RoPE's original length; default original_max_position_embeddings of llama3/yarn"},
      {"rope_theta", kImpl, "", "", "RoPE base (4.x); inside rope_parameters in 5.x"},
      {"rope_scaling", kImpl, "", "",
       "4.x RoPE scaling: default, linear, dynamic, llama3, yarn (others refused)"},
      {"rope_parameters", kImpl, "", "", "5.x RoPE: rope_theta, rope_type and the scaling parameters"},
      {"original_max_position_embeddings", kImpl, "", "", "top-level form; wins over the rope dict's (llama3, yarn)"},
      {"partial_rotary_factor", kOne, "", "1.0", "fraction of head_dim rotated"},
      // Attention span.
      {"sliding_window", kImpl, "qwen2 qwen3 mistral", "",
       "window length W: a query sees the W latest keys, itself included"},
      {"use_sliding_window", kImpl, "qwen2 qwen3", "", "Qwen: without it sliding_window is unused"},
      {"max_window_layers", kImpl, "qwen2 qwen3", "",
       "Qwen: layers with index >= this slide (when layer_types is absent)"},
      {"layer_types", kImpl, "qwen2 qwen3", "", "5.x: full_attention / sliding_attention per layer"},
      // Token ids: data and generation, not the forward pass.
      {"bos_token_id", kImpl, "", "", "begin-of-sequence id for the data; the first of a list"},
      {"eos_token_id", kImpl, "", "", "end-of-sequence id for the data; the first of a list"},
      {"pad_token_id", kIgn, "", "", "padding is masked by the labels"},
      {"unk_token_id", kIgn, "", "", "unknown tokens come from tokenizer.json's model.unk_token"},
      {"sep_token_id", kIgn, "", "", "not used by decoder-only models"},
      {"decoder_start_token_id", kIgn, "", "", "encoder-decoder only"},
      // Storage and runtime.
      {"torch_dtype", kIgn, "", "", "4.x name of the stored dtype; weights are read as stored and computed in float32"},
      {"dtype", kIgn, "", "", "5.x name of torch_dtype"},
      {"transformers_version", kIgn, "", "", "metadata"},
      {"use_cache", kIgn, "", "", "KV cache for generation"},
      {"attn_implementation", kIgn, "", "", "eager / sdpa / flash compute the same attention"},
      {"output_attentions", kIgn, "", "", "extra outputs"},
      {"output_hidden_states", kIgn, "", "", "extra outputs"},
      {"return_dict", kIgn, "", "", "output container"},
      {"torchscript", kIgn, "", "", "export flag"},
      {"tf_legacy_loss", kIgn, "", "", "TensorFlow models only"},
      {"use_bfloat16", kIgn, "", "", "old dtype hint"},
      {"is_encoder_decoder", kOne, "", "false", "decoder-only models only"},
      {"is_decoder", kIgn, "", "", "decoder-only models are decoders"},
      {"add_cross_attention", kOne, "", "false", "no cross-attention"},
      {"tie_encoder_decoder", kIgn, "", "", "encoder-decoder only"},
      {"chunk_size_feed_forward", kIgn, "", "", "not read by these models"},
      {"pruned_heads", kOne, "", "{}", "no pruned heads"},
      {"quantization_config", kOne, "", "null", "quantized checkpoints are not supported"},
      {"auto_map", kOne, "", "null", "custom modeling code is not supported"},
      {"unsloth_version", kIgn, "", "", "metadata"},
      {"unsloth_fixed", kIgn, "", "", "metadata"},
      {"is_llama_config", kIgn, "", "", "nanotron metadata (SmolLM)"},
      {"transformers.js_config", kIgn, "", "", "dtype hints for transformers.js"},
      {"rope_interleaved", kOne, "", "false",
       "nanotron's RoPE layout flag (SmolLM); transformers rotates halves, as lora_train does"},
      {"use_mrope", kOne, "", "false", "Qwen2-VL's multimodal RoPE (DeepSeek-R1-Distill-Qwen writes false)"},
      // Heads and tasks other than causal LM.
      {"id2label", kIgn, "", "", "classification heads"},
      {"label2id", kIgn, "", "", "classification heads"},
      {"num_labels", kIgn, "", "", "classification heads"},
      {"problem_type", kIgn, "", "", "classification heads"},
      {"finetuning_task", kIgn, "", "", "metadata"},
      {"task_specific_params", kIgn, "", "", "pipelines"},
      {"tokenizer_class", kIgn, "", "", "the tokenizer comes from tokenizer.json"},
      {"prefix", kIgn, "", "", "pipelines"},
      // Generation defaults that 4.x wrote into config.json.
      {"max_length", kIgn, "", "", "generation"},
      {"min_length", kIgn, "", "", "generation"},
      {"do_sample", kIgn, "", "", "generation"},
      {"early_stopping", kIgn, "", "", "generation"},
      {"num_beams", kIgn, "", "", "generation"},
      {"num_beam_groups", kIgn, "", "", "generation"},
      {"diversity_penalty", kIgn, "", "", "generation"},
      {"temperature", kIgn, "", "", "generation"},
      {"top_k", kIgn, "", "", "generation"},
      {"top_p", kIgn, "", "", "generation"},
      {"typical_p", kIgn, "", "", "generation"},
      {"repetition_penalty", kIgn, "", "", "generation"},
      {"length_penalty", kIgn, "", "", "generation"},
      {"no_repeat_ngram_size", kIgn, "", "", "generation"},
      {"encoder_no_repeat_ngram_size", kIgn, "", "", "generation"},
      {"bad_words_ids", kIgn, "", "", "generation"},
      {"num_return_sequences", kIgn, "", "", "generation"},
      {"output_scores", kIgn, "", "", "generation"},
      {"return_dict_in_generate", kIgn, "", "", "generation"},
      {"forced_bos_token_id", kIgn, "", "", "generation"},
      {"forced_eos_token_id", kIgn, "", "", "generation"},
      {"remove_invalid_values", kIgn, "", "", "generation"},
      {"exponential_decay_length_penalty", kIgn, "", "", "generation"},
      {"suppress_tokens", kIgn, "", "", "generation"},
      {"begin_suppress_tokens", kIgn, "", "", "generation"},
      {"cross_attention_hidden_size", kIgn, "", "", "encoder-decoder only"},
  };
  return keys;
}

Status CheckConfigKeys(const json& config, const std::string& model_type) {
  for (auto& [key, value] : config.items()) {
    if (!key.empty() && key[0] == '_') continue;
    const ConfigKey* known = nullptr;
    for (const ConfigKey& k : KnownConfigKeys()) {
      if (key == k.name) {
        known = &k;
        break;
      }
    }
    if (!known) {
      return Status::InvalidArgument("config.json: key '" + key +
                                     "' is not one lora_train knows, and it may change the model's math "
                                     "(see docs/trainer-models.md for the keys it reads, checks or ignores)");
    }
    if (known->handling == KeyHandling::kOneValue && !value.is_null() &&
        value != json::parse(known->accepted)) {
      return Status::InvalidArgument("config.json: key '" + key + "' is " + value.dump() +
                                     ", but only " + known->accepted + " is supported (" + known->note + ")");
    }
    if (known->handling == KeyHandling::kImplemented && !Listed(known->model_types, model_type) &&
        !Neutral(value)) {
      return Status::InvalidArgument("config.json: key '" + key + "' is " + value.dump() +
                                     ", but transformers' " + model_type +
                                     " model does not read it (only " + known->model_types +
                                     " do); remove it or leave it unset");
    }
  }
  return Status::Ok();
}

}  // namespace tune
