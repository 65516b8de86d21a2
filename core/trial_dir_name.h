// The name of a trial's directory under <runs_dir>/<experiment>/, which is
// also its TensorBoard run and its MLflow run name: "trial_" and the trial
// number with at least 4 digits ("trial_0007", "trial_12345").
#pragma once

#include <cstdio>
#include <string>

namespace tune {

inline std::string TrialDirName(int number) {
  char name[32];
  std::snprintf(name, sizeof name, "trial_%04d", number);
  return name;
}

}  // namespace tune
