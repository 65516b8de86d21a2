#include "k8s/attempt_status.h"

#include <cmath>
#include <cstdint>

#include "core/json_integer.h"
#include "k8s/object_fields.h"
#include "trial_runner/last_line.h"

namespace tune {
namespace {

using nlohmann::json;
using namespace k8s_object;

// Why a pod is not running yet: the scheduler's or the kubelet's reason.
std::string PendingReason(const json& pod) {
  const json& conds = Path(pod, {"status", "conditions"});
  if (conds.is_array()) {
    for (const json& c : conds) {
      if (Str(c, "type") == "PodScheduled" && Str(c, "status") == "False") {
        return Str(c, "reason") + ": " + Str(c, "message");
      }
    }
  }
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (cs.is_array()) {
    for (const json& c : cs) {
      const json& w = Path(c, {"state", "waiting"});
      if (w.is_object()) {
        std::string m = Str(w, "message");
        return Str(w, "reason") + (m.empty() ? "" : ": " + m);
      }
    }
  }
  return "Pending";
}

// The container has started (running or terminated): its log exists.
bool ContainerStarted(const json& pod) {
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (!cs.is_array()) return false;
  for (const json& c : cs) {
    const json& st = Path(c, {"state"});
    if (st.contains("running") || st.contains("terminated")) return true;
  }
  return false;
}

std::string Phase(const json& pod) { return Str(Path(pod, {"status"}), "phase"); }

}  // namespace

ClusterView IndexObjects(const Workload& w, const std::vector<const json*>& lists) {
  ClusterView view;
  for (const json* l : lists) {
    if (!l->is_object() || !l->contains("items")) continue;
    for (const json& item : (*l)["items"]) {
      std::string kind = Str(item, "kind");
      std::string name = Str(Metadata(item), "name");
      if (kind == w.Kind()) view.workloads[name] = &item;
      if (kind == "Pod") view.pods[w.OwnerOf(item)].push_back(&item);
    }
  }
  return view;
}

std::optional<AttemptEnd> EndOf(const Workload& w, const std::string& name, const json* object,
                                const std::vector<const json*>& pods, double running_s, double timeout_s) {
  if (!object) {
    return AttemptEnd{RunState::kFailed,
                      w.Kind() + " " + name +
                          " no longer exists: it was deleted outside the tuner, or the cluster lost its "
                          "state; the attempt's pods and their results are gone"};
  }
  if (Deleting(*object)) return AttemptEnd{RunState::kFailed, w.Kind() + " " + name + " was deleted outside the tuner"};
  if (auto end = w.Ended(*object)) {
    if (end->succeeded) return AttemptEnd{RunState::kSucceeded, ""};
    std::string message = w.Kind() + " failed: " + end->reason + (end->message.empty() ? "" : " (" + end->message + ")");
    std::string pf = PodFailures(w, pods);
    if (!pf.empty()) message += "; " + pf;
    return AttemptEnd{RunState::kFailed, message};
  }
  if (w.EnforceDeadline() && timeout_s > 0 && running_s > timeout_s) {
    // A kind without a deadline of its own (TrainJob): trial.timeout_s here.
    // Its pods are stopped now (as a Job's deadline stops them), which also
    // ends rank 0's log stream.
    return AttemptEnd{RunState::kFailed,
                      w.Kind() + " failed: DeadlineExceeded (it ran longer than trial.timeout_s, " +
                          std::to_string(static_cast<int64_t>(std::ceil(timeout_s))) + " s)",
                      /*delete_now=*/true};
  }
  return std::nullopt;
}

std::string PendingPod(const std::vector<const json*>& pods) {
  for (const json* p : pods) {
    if (!Deleting(*p) && Phase(*p) == "Pending") return "pod " + Str(Metadata(*p), "name") + " " + PendingReason(*p);
  }
  return "";
}

bool AnyPodRunning(const std::vector<const json*>& pods) {
  for (const json* p : pods) {
    if (!Deleting(*p) && Phase(*p) == "Running") return true;
  }
  return false;
}

std::string PodFailures(const Workload& w, const std::vector<const json*>& pods) {
  std::string out;
  for (const json* p : pods) {
    if (Phase(*p) != "Failed") continue;
    std::string what = "rank " + w.RankOf(*p) + " (pod " + Str(Metadata(*p), "name") + ")";
    const json& cs = Path(*p, {"status", "containerStatuses"});
    if (cs.is_array() && !cs.empty()) {
      const json& t = Path(cs[0], {"state", "terminated"});
      if (t.is_object()) {
        const auto code = t.contains("exitCode") ? JsonInteger<int64_t>(t["exitCode"]) : std::nullopt;
        what += code ? " exited with code " + std::to_string(*code) : std::string(" exited");
        if (!Str(t, "reason").empty()) what += " (" + Str(t, "reason") + ")";
        if (std::string last = LastLine(Str(t, "message")); !last.empty()) what += ": \"" + last + "\"";
      }
    } else if (!Str(Path(*p, {"status"}), "reason").empty()) {
      what += " failed: " + Str(Path(*p, {"status"}), "reason");
    }
    out += (out.empty() ? "" : "; ") + what;
  }
  return out;
}

const json* RankZeroPod(const Workload& w, const std::vector<const json*>& pods) {
  const json* speaker = nullptr;
  int rank = -1;
  for (const json* p : pods) {
    if (w.RankOf(*p) != "0" || !ContainerStarted(*p)) continue;
    std::string phase = Phase(*p);
    int r = phase == "Succeeded" ? 3 : (phase != "Failed" && !Deleting(*p)) ? 2 : 1;
    if (r > rank ||
        (r == rank && Str(Metadata(*p), "creationTimestamp") >= Str(Metadata(*speaker), "creationTimestamp"))) {
      speaker = p;
      rank = r;
    }
  }
  return speaker;
}

std::string PodIdentity(const json& pod) {
  std::string id = Str(Path(pod, {"metadata"}), "uid") + "/";
  const json& cs = Path(pod, {"status", "containerStatuses"});
  if (cs.is_array() && !cs.empty() && cs[0].is_object() && cs[0].contains("restartCount") &&
      cs[0]["restartCount"].is_number_integer()) {
    id += std::to_string(cs[0]["restartCount"].get<int64_t>());
  }
  return id;
}

}  // namespace tune
