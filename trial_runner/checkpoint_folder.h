// Checkpoint folders of a trial directory (docs/architecture.md,
// "Checkpoints"): a trial saves its state as `checkpoint-<step>` folders in
// its trial directory (Hugging Face Trainer's layout). A folder counts once
// it exists under that name; `tune` never reads what is inside.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace tune {

struct CheckpointFolder {
  std::string path;  // absolute when `trial_dir` was
  int64_t step = 0;
};

// The folder `checkpoint-<step>` (step: decimal digits, at most 18) of
// `trial_dir` with the highest step, or with the highest step at most
// `at_most`; nullopt if there is none or the directory cannot be read.
// Files of such names and other folders are ignored.
std::optional<CheckpointFolder> NewestCheckpoint(const std::string& trial_dir,
                                                 std::optional<int64_t> at_most = std::nullopt);

// The checkpoint of `trial_dir` nearest to the state of step `step`: the
// newest at or before it, else (a trial that deleted its older folders
// while it ran on) the oldest after it; nullopt if there is none.
std::optional<CheckpointFolder> NearestCheckpoint(const std::string& trial_dir, int64_t step);

// Population Based Training's exploit: puts a copy of the donor's newest
// checkpoint (with `near`, NearestCheckpoint(donor_dir, *near)) into
// `recipient_dir` as its only checkpoint folder. The copy is
// written under a temporary name and renamed, the recipient's own
// checkpoint-* folders are removed only after the copy is complete, and the
// donor's folders are never moved or changed (Ray moved them: ray#8441). A
// donor program that deletes the folder while it is copied (its own
// rotation of old checkpoints) makes the copy start over from its then
// newest one, up to three times. NotFound: the donor has no checkpoint;
// kInternal: the copy failed (the message names the folder and the cause;
// the recipient's folders are then as they were).
Result<CheckpointFolder> CopyNewestCheckpoint(const std::string& donor_dir, const std::string& recipient_dir,
                                              std::optional<int64_t> near = std::nullopt);

}  // namespace tune
