// Fuzzes ImportKatibExperiment (import/katib_import.h) with a whole
// YAML document. Beyond "no crash, no undefined behaviour, no exception",
// it checks what the contract promises: an error is InvalidArgument, one
// line, naming the file first; a conversion is valid JSON with one-line
// notes, of bounded size however its aliases expand, and the spec parser
// reads it (accepting or refusing) without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "import/katib_import.h"
#include "spec/experiment_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto imported = tune::ImportKatibExperiment(text, "fuzz.yaml");
  if (!imported.ok()) {
    const std::string& m = imported.status().message();
    if (!imported.status().IsInvalidArgument() || m.rfind("fuzz.yaml: ", 0) != 0) std::abort();
    if (m.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  for (const std::string& note : imported->notes) {
    if (note.empty() || note.find('\n') != std::string::npos) std::abort();
  }
  if (!nlohmann::json::accept(imported->experiment_json)) std::abort();
  // Aliases expand within kKatibMaxNodes and kKatibMaxTextBytes, so the
  // result stays far below this, whatever the input names.
  if (imported->experiment_json.size() > (size_t{64} << 20)) std::abort();
  auto spec = tune::ParseExperimentSpec(imported->experiment_json, "experiment.json");
  (void)spec;
  return 0;
}
