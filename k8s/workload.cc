#include "k8s/workload.h"

#include <nlohmann/json.hpp>

namespace tune {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Labels(const json& obj) {
  static const json kEmpty = json::object();
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return kEmpty;
  auto l = md->find("labels");
  return l != md->end() && l->is_object() ? *l : kEmpty;
}

const json& Annotations(const json& obj) {
  static const json kEmpty = json::object();
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return kEmpty;
  auto a = md->find("annotations");
  return a != md->end() && a->is_object() ? *a : kEmpty;
}

// The first condition of `types` with status True.
std::optional<WorkloadEnd> EndedBy(const json& obj, const char* success, const char* failure) {
  auto st = obj.find("status");
  if (st == obj.end() || !st->is_object() || !st->contains("conditions") || !(*st)["conditions"].is_array()) {
    return std::nullopt;
  }
  for (const json& c : (*st)["conditions"]) {
    std::string type = Str(c, "type");
    if ((type == success || type == failure) && Str(c, "status") == "True") {
      return WorkloadEnd{type == success, Str(c, "reason"), Str(c, "message")};
    }
  }
  return std::nullopt;
}

class JobWorkload : public Workload {
 public:
  std::string Kind() const override { return "Job"; }
  std::string Resource() const override { return "jobs.batch"; }
  std::string ListName() const override { return "jobs"; }
  std::string Ref(const std::string& name) const override { return "job/" + name; }
  std::string CompanionResource() const override { return "service"; }
  std::optional<WorkloadEnd> Ended(const json& obj) const override { return EndedBy(obj, "Complete", "Failed"); }
  std::string OwnerOf(const json& pod) const override { return Str(Labels(pod), "job-name"); }
  std::string RankOf(const json& pod) const override {
    return Str(Annotations(pod), "batch.kubernetes.io/job-completion-index");
  }
};

class PyTorchJobWorkload : public Workload {
 public:
  std::string Kind() const override { return "PyTorchJob"; }
  std::string Resource() const override { return "pytorchjobs.kubeflow.org"; }
  std::optional<WorkloadEnd> Ended(const json& obj) const override {
    return EndedBy(obj, "Succeeded", "Failed");
  }
  std::string OwnerOf(const json& pod) const override {
    return Str(Labels(pod), "training.kubeflow.org/job-name");
  }
  std::string RankOf(const json& pod) const override {
    // The operator's RANK: the master is 0, worker i is i + 1.
    const json& l = Labels(pod);
    std::string type = Str(l, "training.kubeflow.org/replica-type");
    std::string index = Str(l, "training.kubeflow.org/replica-index");
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 6) return "";
    if (type == "master") return index;
    if (type == "worker") return std::to_string(std::stoi(index) + 1);
    return "";
  }
  bool RestartsUnderSameName() const override { return true; }
  std::string GroupVersion() const override { return "kubeflow.org/v1"; }
  std::string Plural() const override { return "pytorchjobs"; }
  std::string NotInstalled() const override {
    return "the Kubeflow training operator is not installed: the cluster serves no pytorchjobs.kubeflow.org";
  }
};

class TrainJobWorkload : public Workload {
 public:
  std::string Kind() const override { return "TrainJob"; }
  std::string Resource() const override { return "trainjobs.trainer.kubeflow.org"; }
  // Kubeflow Trainer (kubeflow/trainer, pkg/controller/trainjob_controller.go
  // and pkg/runtime/framework/plugins/jobset/jobset.go at the commit of the
  // CRD in tests/k8s/crds) ends a TrainJob with its JobSet's Completed or
  // Failed condition, renamed Complete or Failed, reason and message as the
  // JobSet set them (AllJobsCompleted; FailedJobs, ReachedMaxRestarts). It
  // sets Created False, reason JobsBuildFailed, when it cannot build the
  // JobSet (the runtime it names does not exist, ...): no pod ever comes,
  // so that ends the attempt too. (JobsCreationFailed is retried by the
  // controller and is not an end.)
  std::optional<WorkloadEnd> Ended(const json& obj) const override {
    if (auto end = EndedBy(obj, "Complete", "Failed")) return end;
    auto st = obj.find("status");
    if (st == obj.end() || !st->is_object() || !st->contains("conditions") || !(*st)["conditions"].is_array()) {
      return std::nullopt;
    }
    for (const json& c : (*st)["conditions"]) {
      if (Str(c, "type") == "Created" && Str(c, "status") == "False" && Str(c, "reason") == "JobsBuildFailed") {
        std::string runtime;
        if (auto spec = obj.find("spec"); spec != obj.end() && spec->is_object() && spec->contains("runtimeRef")) {
          runtime = Str((*spec)["runtimeRef"], "name");
        }
        return WorkloadEnd{false, "JobsBuildFailed",
                           Str(c, "message") + " (from the ClusterTrainingRuntime \"" + runtime +
                               "\" that backend.runtime_ref names: does it exist?)"};
      }
    }
    return std::nullopt;
  }
  std::string OwnerOf(const json& pod) const override {
    return Str(Labels(pod), "jobset.sigs.k8s.io/jobset-name");
  }
  std::string RankOf(const json& pod) const override {
    const json& l = Labels(pod);
    if (Str(l, "jobset.sigs.k8s.io/job-index") != "0") return "";
    return Str(l, "batch.kubernetes.io/job-completion-index");
  }
  bool PodsCarryLabels() const override { return false; }
  std::string GroupVersion() const override { return "trainer.kubeflow.org/v1alpha1"; }
  std::string Plural() const override { return "trainjobs"; }
  std::string NotInstalled() const override {
    return "Kubeflow Trainer is not installed: the cluster serves no trainjobs.trainer.kubeflow.org";
  }
  bool EnforceDeadline() const override { return true; }
  bool RestartsUnderSameName() const override { return true; }
};

}  // namespace

std::vector<std::string> Workload::DeleteRefs(const std::string& name) const {
  std::vector<std::string> refs = {Ref(name)};
  if (!CompanionResource().empty()) refs.push_back(CompanionResource() + "/" + name);
  return refs;
}

std::string Workload::LabelledResources() const {
  return ListName() + (CompanionResource().empty() ? "" : "," + CompanionResource() + "s") + ",pods";
}

std::string Workload::PodSelector(const std::vector<std::string>& names) const {
  std::string sel;
  for (const std::string& n : names) sel += (sel.empty() ? "" : ",") + n;
  return "jobset.sigs.k8s.io/jobset-name in (" + sel + ")";
}

std::vector<std::vector<std::string>> Workload::Permissions() const {
  std::vector<std::vector<std::string>> out;
  for (const char* verb : {"create", "get", "list", "watch", "delete"}) out.push_back({verb, Resource()});
  if (!CompanionResource().empty()) {
    for (const char* verb : {"create", "get", "list", "watch", "delete"}) {
      out.push_back({verb, CompanionResource() + "s"});
    }
  }
  for (const char* verb : {"get", "list", "watch", "delete"}) out.push_back({verb, "pods"});
  out.push_back({"get", "pods", "log"});
  return out;
}

std::unique_ptr<Workload> MakeWorkload(const std::string& job_kind) {
  if (job_kind == "job") return std::make_unique<JobWorkload>();
  if (job_kind == "pytorchjob") return std::make_unique<PyTorchJobWorkload>();
  if (job_kind == "trainjob") return std::make_unique<TrainJobWorkload>();
  return nullptr;
}

}  // namespace tune
