// `tune import katib EXPERIMENT.yaml [-o experiment.json]`: the importer
// (import/) plus the file handling and the check that the result is
// an experiment `tune validate` reads.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/read_file.h"
#include "import/katib_import.h"
#include "spec/experiment_spec.h"
#include "tuner/cli_commands.h"

namespace tune {
namespace {

constexpr int kExitOk = 0, kExitUsage = 2;

// Writes `text` to `path` through a temporary file beside it, so that a
// failed write leaves no partial file.
Status WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::InvalidArgument(path + ": cannot write: " + std::strerror(errno));
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return Status::InvalidArgument(path + ": cannot write: " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return Status::InvalidArgument(path + ": cannot write: " + std::strerror(e));
  }
  return Status::Ok();
}

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
  if (Status st = WriteFile(out_path, imported->experiment_json); !st.ok()) {
    err << "tune: " << st.message() << "\n";
    return kExitUsage;
  }
  err << "tune: wrote " << out_path << " (check it with: tune validate " << out_path << ")\n";
  return kExitOk;
}

}  // namespace tune
