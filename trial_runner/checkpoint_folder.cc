#include "trial_runner/checkpoint_folder.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <vector>

namespace tune {
namespace fs = std::filesystem;

namespace {

constexpr const char kPrefix[] = "checkpoint-";

// The step of a folder named checkpoint-<digits>, else nullopt.
std::optional<int64_t> StepOf(const std::string& name) {
  const size_t n = sizeof(kPrefix) - 1;
  if (name.size() <= n || name.size() > n + 18 || name.compare(0, n, kPrefix) != 0) return std::nullopt;
  int64_t step = 0;
  for (size_t i = n; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

// Every checkpoint-<step> folder of `dir` (unordered).
std::vector<CheckpointFolder> ListCheckpoints(const std::string& dir) {
  std::vector<CheckpointFolder> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    auto step = StepOf(it->path().filename().string());
    if (!step) continue;
    std::error_code type_ec;
    // A symlink to a folder counts as the folder (is_directory follows it).
    if (!fs::is_directory(it->path(), type_ec)) continue;
    out.push_back({it->path().string(), *step});
  }
  return out;
}

}  // namespace

std::optional<CheckpointFolder> NewestCheckpoint(const std::string& trial_dir, std::optional<int64_t> at_most) {
  std::optional<CheckpointFolder> best;
  for (CheckpointFolder& c : ListCheckpoints(trial_dir)) {
    if (at_most && c.step > *at_most) continue;
    if (!best || c.step > best->step) best = std::move(c);
  }
  return best;
}

std::optional<CheckpointFolder> NearestCheckpoint(const std::string& trial_dir, int64_t step) {
  if (auto before = NewestCheckpoint(trial_dir, step)) return before;
  std::optional<CheckpointFolder> after;
  for (CheckpointFolder& c : ListCheckpoints(trial_dir)) {
    if (!after || c.step < after->step) after = std::move(c);
  }
  return after;
}

Result<CheckpointFolder> CopyNewestCheckpoint(const std::string& donor_dir, const std::string& recipient_dir,
                                              std::optional<int64_t> near) {
  std::string last_error;
  for (int tries = 0; tries < 3; ++tries) {
    auto source = near ? NearestCheckpoint(donor_dir, *near) : NewestCheckpoint(donor_dir);
    if (!source) {
      if (!last_error.empty()) break;
      return Status::NotFound(donor_dir + " has no checkpoint-<step> folder");
    }
    const fs::path name = fs::path(source->path).filename();
    const fs::path temp = fs::path(recipient_dir) / (".tune-copy-" + name.string() + "-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(temp, ec);
    fs::copy(source->path, temp, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    // A folder the donor deleted meanwhile fails the copy or leaves it
    // incomplete: the source is gone afterwards either way.
    std::error_code gone_ec;
    if (ec || !fs::is_directory(source->path, gone_ec)) {
      last_error = ec ? ec.message() : "the donor deleted it while it was copied";
      fs::remove_all(temp, gone_ec);
      continue;
    }
    for (const CheckpointFolder& own : ListCheckpoints(recipient_dir)) {
      fs::remove_all(own.path, ec);
      if (ec) {
        fs::remove_all(temp, gone_ec);
        return Status::Internal("cannot remove " + own.path + ": " + ec.message());
      }
    }
    const fs::path target = fs::path(recipient_dir) / name;
    fs::rename(temp, target, ec);
    if (ec) {
      fs::remove_all(temp, gone_ec);
      return Status::Internal("cannot rename " + temp.string() + " to " + target.string() + ": " + ec.message());
    }
    return CheckpointFolder{target.string(), source->step};
  }
  return Status::Internal("cannot copy the newest checkpoint of " + donor_dir + ": " + last_error);
}

}  // namespace tune
