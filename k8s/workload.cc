#include "k8s/workload.h"

#include <nlohmann/json.hpp>

#include "k8s/job_workload.h"
#include "k8s/object_fields.h"
#include "k8s/pytorchjob_workload.h"
#include "k8s/trainjob_workload.h"

namespace tune {

using nlohmann::json;
using k8s_object::Str;

std::optional<WorkloadEnd> Workload::EndedByCondition(const json& obj, const char* success, const char* failure) {
  const json& conditions = k8s_object::Path(obj, {"status", "conditions"});
  if (!conditions.is_array()) return std::nullopt;
  for (const json& c : conditions) {
    std::string type = Str(c, "type");
    if ((type == success || type == failure) && Str(c, "status") == "True") {
      return WorkloadEnd{type == success, Str(c, "reason"), Str(c, "message")};
    }
  }
  return std::nullopt;
}

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
