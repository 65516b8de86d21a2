// Fuzzes the trainer's readers of Hugging Face JSON files: config.json
// (ParseModelConfig, with its RoPE and key checks) and adapter_config.json
// (ParseAdapterConfig); the input is the file's text, given to both. Beyond
// "no crash, no undefined behaviour", what a reader accepts must survive a
// round trip: the text the trainer writes back (ModelConfigToJson,
// AdapterConfigJson) reads back as the same configuration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trainer/lora_config.h"
#include "trainer/model_config.h"

namespace {

void CheckModelConfig(const std::string& text) {
  auto c = tune::ParseModelConfig(text);
  if (!c.ok()) return;
  if (c->vocab_size <= 0 || c->hidden_size <= 0 || c->num_hidden_layers <= 0 || c->head_dim <= 0 ||
      c->num_attention_heads <= 0 || c->num_key_value_heads <= 0 ||
      c->num_attention_heads % c->num_key_value_heads != 0) {
    std::abort();
  }
  auto again = tune::ParseModelConfig(tune::ModelConfigToJson(*c));
  if (!again.ok()) std::abort();
  const tune::ModelConfig& a = *c;
  const tune::ModelConfig& b = *again;
  if (a.model_type != b.model_type || a.vocab_size != b.vocab_size || a.hidden_size != b.hidden_size ||
      a.intermediate_size != b.intermediate_size || a.num_hidden_layers != b.num_hidden_layers ||
      a.num_attention_heads != b.num_attention_heads || a.num_key_value_heads != b.num_key_value_heads ||
      a.head_dim != b.head_dim || a.max_position_embeddings != b.max_position_embeddings ||
      a.tie_word_embeddings != b.tie_word_embeddings || a.sliding_window != b.sliding_window ||
      a.layer_sliding != b.layer_sliding || HasQkvBias(a) != HasQkvBias(b) ||
      HasOutputBias(a) != HasOutputBias(b) || HasQkNorm(a) != HasQkNorm(b)) {
    std::abort();
  }
}

void CheckAdapterConfig(const std::string& text) {
  auto c = tune::ParseAdapterConfig(text);
  if (!c.ok()) return;
  auto again = tune::ParseAdapterConfig(tune::AdapterConfigJson(*c, "base"));
  if (!again.ok()) std::abort();
  if (again->r != c->r || again->alpha != c->alpha || again->dropout != c->dropout ||
      again->target_modules != c->target_modules || again->use_rslora != c->use_rslora) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckModelConfig(text);
  CheckAdapterConfig(text);
  return 0;
}
