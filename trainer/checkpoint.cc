#include "trainer/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_integer.h"
#include "trainer/rng_state.h"

namespace tune {
namespace {

namespace fs = std::filesystem;
constexpr char kPrefix[] = "checkpoint-";
constexpr char kStateFile[] = "trainer_state.json";

// (step, path) of every complete checkpoint in `output`, oldest first.
std::vector<std::pair<int64_t, fs::path>> ListCheckpoints(const std::string& output) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(output, ec)) return out;
  for (const auto& entry : fs::directory_iterator(output, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !entry.is_directory()) continue;
    const std::string digits = name.substr(sizeof(kPrefix) - 1);
    // More than 18 digits is no step lora_train wrote (and would overflow).
    if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    if (!fs::exists(entry.path() / kStateFile)) continue;
    out.emplace_back(std::stoll(digits), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Status SaveCheckpoint(const std::string& output, int64_t step, const TensorMap& weights,
                      const std::string& weights_file, torch::optim::Optimizer& optimizer,
                      const TensorMap& rng_state, const std::map<std::string, std::string>& extra_files,
                      int64_t keep) {
  const fs::path final_dir = fs::path(output) / (kPrefix + std::to_string(step));
  const fs::path tmp = fs::path(output) / (kPrefix + std::to_string(step) + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status::Internal("cannot create " + tmp.string() + ": " + ec.message());
  TUNE_RETURN_IF_ERROR(WriteSafetensors((tmp / weights_file).string(), weights));
  try {
    torch::save(optimizer, (tmp / "optimizer.pt").string());
  } catch (const c10::Error& e) {
    return Status::Internal("cannot save the optimizer state: " + std::string(e.what_without_backtrace()));
  }
  TUNE_RETURN_IF_ERROR(WriteSafetensors((tmp / "rng_state.safetensors").string(), rng_state));
  for (const auto& [name, text] : extra_files) {
    std::ofstream f(tmp / name);
    f << text;
    if (!f) return Status::Internal("cannot write " + (tmp / name).string());
  }
  {
    std::ofstream f(tmp / kStateFile);  // written last: marks the folder complete
    f << nlohmann::json{{"global_step", step}, {"weights_file", weights_file}}.dump(2) << "\n";
    if (!f) return Status::Internal("cannot write " + (tmp / kStateFile).string());
  }
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) return Status::Internal("cannot rename " + tmp.string() + ": " + ec.message());
  auto all = ListCheckpoints(output);
  for (size_t i = 0; keep > 0 && i + keep < all.size(); ++i) fs::remove_all(all[i].second, ec);
  return Status::Ok();
}

Result<CheckpointContents> LoadCheckpoint(const std::string& dir, const std::string& weights_file,
                                          torch::optim::Optimizer& optimizer, torch::Device device, int rank) {
  const fs::path d(dir);
  if (!fs::exists(d / kStateFile)) return Status::NotFound("no checkpoint in " + dir + " (missing " + kStateFile + ")");
  CheckpointContents out;
  try {
    std::ifstream f(d / kStateFile);
    const nlohmann::json step = nlohmann::json::parse(f).at("global_step");
    std::optional<int64_t> n = JsonInteger<int64_t>(step);
    if (!n || *n < 0) {
      return Status::InvalidArgument(dir + "/" + kStateFile + ": \"global_step\" must be a non-negative integer, got " +
                                     step.dump());
    }
    out.step = *n;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(dir + "/" + kStateFile + ": " + e.what());
  }
  TUNE_ASSIGN_OR_RETURN(out.weights, ReadSafetensors((d / weights_file).string()));
  try {
    torch::load(optimizer, (d / "optimizer.pt").string(), device);
  } catch (const c10::Error& e) {
    return Status::InvalidArgument(dir + ": cannot restore the optimizer state: " + e.what_without_backtrace());
  }
  TUNE_ASSIGN_OR_RETURN(TensorMap rng, ReadSafetensors((d / "rng_state.safetensors").string()));
  if (!rng.count("cpu")) return Status::InvalidArgument(dir + ": rng_state.safetensors lacks 'cpu'");
  const TensorMap mine = RankRngState(rng, rank);
  if (!mine.empty()) {
    Status restored = RestoreRngState(mine, device);
    if (!restored.ok()) return Status::InvalidArgument(dir + "/rng_state.safetensors: " + restored.message());
  }
  return out;
}

std::string LatestCheckpoint(const std::string& output) {
  auto all = ListCheckpoints(output);
  return all.empty() ? "" : all.back().second.string();
}

}  // namespace tune
