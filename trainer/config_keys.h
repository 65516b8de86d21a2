// The explicit list of config.json keys lora_train knows, with how each is
// handled. A key that could change the model's math is either implemented
// (and tested against transformers) or refused; a harmless one is ignored on
// purpose. A key that is not in the list is refused. Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace tune {

enum class KeyHandling {
  kImplemented,  // read and used as transformers uses it
  kOneValue,     // only the value in `accepted` (or null) is supported
  kIgnored,      // does not change the forward or backward math
};

struct ConfigKey {
  const char* name;
  KeyHandling handling;
  // Model types whose transformers model reads the key ("" = every type).
  // For another type transformers ignores the key; lora_train then accepts
  // only a neutral value (null, false, 0, the default) and refuses the rest,
  // since a set value there most likely means a different model.
  const char* model_types;
  const char* accepted;  // kOneValue: the accepted value as JSON text
  const char* note;      // what lora_train does with it (docs/trainer-models.md)
};

// Every known key, in the order docs/trainer-models.md lists them.
const std::vector<ConfigKey>& KnownConfigKeys();

// Checks every top-level key of a config.json object for `model_type`. Keys
// that start with '_' (_name_or_path, _commit_hash, ...) are metadata and
// ignored. Non-OK (InvalidArgument) is one sentence that names the key: not
// known, a value other than the one accepted, or a non-neutral value for a
// model type that does not read it.
Status CheckConfigKeys(const nlohmann::json& config, const std::string& model_type);

}  // namespace tune
