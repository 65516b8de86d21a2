// `tune cleanup`: deletes what experiments left in the Kubernetes cluster
// (docs/kubernetes.md, "Cleaning up").
#include <algorithm>
#include <filesystem>
#include <set>

#include "spec/experiment_spec.h"
#include "storage/open_storage.h"
#include "storage/storage.h"
#include "tuner/cli_commands.h"
#include "tuner/run_lock.h"

#ifdef TUNE_HAVE_K8S
#include "k8s/cleanup.h"
#include "k8s/render.h"
#endif

namespace tune {

int CleanupCommand(const CleanupArgs& args, std::ostream& out, std::ostream& err) {
  constexpr int kOk = 0, kFailed = 1, kUsage = 2;
#ifndef TUNE_HAVE_K8S
  (void)args;
  (void)out;
  err << "tune: cleanup: this tune is built without the Kubernetes backend\n";
  return kUsage;
#else
  if (args.db_path && args.db_path->empty()) {
    err << "tune: --db: expected a database file path or a postgresql:// URL, got \"\"\n";
    return kUsage;
  }
  const std::string db_path = args.db_path.value_or("tune.db");
  auto storage = OpenStorage(db_path, /*create_if_missing=*/false);
  if (!storage.ok()) {
    if (storage.status().IsNotFound()) {
      err << "tune: " << db_path << ": no results database here (pass --db)\n";
    } else {
      err << "tune: " << storage.status().message() << "\n";
    }
    return kUsage;
  }
  // The experiments to clean: the one named, else every experiment of the
  // database that runs on Kubernetes.
  std::vector<ExperimentRecord> targets;
  if (!args.experiment.empty()) {
    auto found = (*storage)->FindExperiment(args.experiment);
    if (!found.ok()) {
      err << "tune: --experiment: no experiment '" << args.experiment << "' in " << db_path
          << " (tune status --db " << db_path << " lists them)\n";
      return kUsage;
    }
    targets.push_back(*found);
  } else {
    auto all = (*storage)->ListExperiments();
    if (!all.ok()) {
      err << "tune: " << all.status().message() << "\n";
      return kFailed;
    }
    targets = *all;
  }
  int rc = kOk;
  int cleaned = 0;
  for (const ExperimentRecord& e : targets) {
    auto spec = ParseExperimentSpec(e.spec_json, db_path + " (experiment '" + e.name + "')");
    if (!spec.ok()) {
      err << "tune: " << spec.status().message() << "\n";
      rc = std::max(rc, kFailed);
      continue;
    }
    if (args.experiment.empty() && spec->backend.type != "kubernetes") continue;
    KubernetesOptions opts = spec->backend.kubernetes;
    if (!args.namespace_.empty()) opts.namespace_ = args.namespace_;
    // A run of the experiment would delete what it still needs, or create
    // more as we delete: the experiment's run lock says none is running,
    // and keeps one from starting meanwhile.
    RunLock lock;
    if (Status st = lock.Acquire(db_path, e.name); !st.ok()) {
      err << "tune: " << st.message() << "; its objects are deleted when that run ends (or stop it first)\n";
      rc = args.experiment.empty() ? std::max(rc, kFailed) : kUsage;
      continue;
    }
    ++cleaned;
    const std::string where = "experiment '" + e.name + "' (namespace " + opts.namespace_ + ", label " +
                              kExperimentLabel + "=" + ExperimentLabelValue(e.name) + ")";
    auto outcome = CleanupExperiment(opts, e.name, args.dry_run);
    if (!outcome.ok()) {
      err << "tune: " << where << ": " << outcome.status().message() << "\n";
      rc = std::max(rc, kFailed);
      continue;
    }
    if (outcome->found.empty()) {
      out << "tune: " << where << ": nothing to delete\n";
      continue;
    }
    if (args.dry_run) {
      for (const std::string& o : outcome->found) out << "would delete " << o << "\n";
      out << "tune: " << where << ": " << outcome->found.size() << " object"
          << (outcome->found.size() == 1 ? "" : "s") << " would be deleted (dry run)\n";
      continue;
    }
    const std::set<std::string> left(outcome->left.begin(), outcome->left.end());
    size_t deleted = 0;
    for (const std::string& o : outcome->found) {
      if (left.count(o)) continue;
      out << "deleted " << o << "\n";
      ++deleted;
    }
    if (deleted > 0 || outcome->left.empty()) {
      out << "tune: " << where << ": deleted " << deleted << " object" << (deleted == 1 ? "" : "s") << "\n";
    }
    if (!outcome->left.empty()) {
      // kubectl says it once per object: its first line is enough.
      std::string why = outcome->error.substr(0, outcome->error.find('\n'));
      err << "tune: " << where << ": could not delete " << outcome->left.size() << " object"
          << (outcome->left.size() == 1 ? "" : "s") << " (";
      for (size_t i = 0; i < outcome->left.size() && i < 10; ++i) err << (i ? ", " : "") << outcome->left[i];
      err << (outcome->left.size() > 10 ? ", ..." : "") << "): " << why
          << "; try again, or delete them with: " << outcome->command << "\n";
      rc = std::max(rc, kFailed);
    }
  }
  if (targets.empty() || (args.experiment.empty() && cleaned == 0 && rc == kOk)) {
    out << "tune: no experiment in " << db_path << " runs on Kubernetes: nothing to clean up\n";
  }
  return rc;
#endif
}

}  // namespace tune
