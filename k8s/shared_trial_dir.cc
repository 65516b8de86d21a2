#include "k8s/shared_trial_dir.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

namespace tune {

namespace {

// True if `path` is `dir` or lies below it (both lexically normal, absolute;
// "/a//b/" and "/a/b" are the same directory).
bool IsAtOrBelow(const std::string& path, std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (path == dir) return true;
  if (dir == "/") return true;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

}  // namespace

Status CheckTrialDirsShared(const KubernetesOptions& options, const std::string& runs_dir, const std::string& what) {
  std::string dir = std::filesystem::path(runs_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  nlohmann::json volumes = nlohmann::json::parse(options.volumes_json, nullptr, false);
  nlohmann::json mounts = nlohmann::json::parse(options.volume_mounts_json, nullptr, false);
  std::set<std::string> claims;
  if (volumes.is_array()) {
    for (const auto& v : volumes) {
      if (v.is_object() && v.contains("persistentVolumeClaim") && v.value("name", "") != "") {
        claims.insert(v["name"].get<std::string>());
      }
    }
  }
  if (mounts.is_array()) {
    for (const auto& m : mounts) {
      if (!m.is_object() || !m.contains("mountPath") || !m["mountPath"].is_string()) continue;
      if (!claims.count(m.value("name", ""))) continue;
      const std::string mount = std::filesystem::path(m["mountPath"].get<std::string>()).lexically_normal().string();
      if (IsAtOrBelow(dir, mount)) return Status::Ok();
    }
  }
  return Status::FailedPrecondition(
      what + " continues trials from checkpoints, so on Kubernetes the trial directories (" + dir +
      ") must lie on a persistentVolumeClaim that backend.volumes and backend.volume_mounts mount in the trial pods "
      "at the same path, as the tuner Job of the kit mounts tune-data at /data; none of backend.volume_mounts does");
}

}  // namespace tune
