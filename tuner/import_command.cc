// `tune import katib EXPERIMENT.yaml [-o experiment.json]`: the importer
// (import/) plus the file handling and the check that the result is
// an experiment `tune validate` reads.
#include <ostream>

#include "core/atomic_write.h"
#include "core/read_file.h"
#include "import/katib_import.h"
#include "spec/experiment_spec.h"
#include "tuner/cli_commands.h"

namespace tune {
namespace {

constexpr int kExitOk = 0, kExitUsage = 2;

}  // namespace

int ImportKatibCommand(const std::string& path, const std::string& out_path, std::ostream& out, std::ostream& err) {
  // A FIFO or device is refused without reading it; a file over the cap
  // without holding it.
  auto text = ReadFileCapped(path, kKatibMaxYamlBytes);
  if (!text.ok()) {
    err << "tune: " << text.status().message() << "\n";
    return kExitUsage;
  }
  auto imported = ImportKatibExperiment(*text, path);
  if (!imported.ok()) {
    err << "tune: " << imported.status().message() << "\n";
    return kExitUsage;
  }
  for (const std::string& note : imported->notes) err << "tune: " << path << ": " << note << "\n";
  // The result must be an experiment that tune reads; the Katib file may
  // still hold what tune refuses (e.g. a bound that is not below the other).
  std::string spec_name = out_path.empty() ? "experiment.json" : out_path;
  auto spec = ParseExperimentSpec(imported->experiment_json, spec_name);
  if (!spec.ok()) {
    err << "tune: " << path << ": converted, but the result is not a valid experiment, so nothing was written ("
        << spec.status().message() << ")\n";
    return kExitUsage;
  }
  if (out_path.empty()) {
    out << imported->experiment_json;
    return kExitOk;
  }
  if (Status st = WriteFileAtomically(out_path, imported->experiment_json); !st.ok()) {
    err << "tune: " << st.message() << "\n";
    return kExitUsage;
  }
  err << "tune: wrote " << out_path << " (check it with: tune validate " << out_path << ")\n";
  return kExitOk;
}

}  // namespace tune
