// ParetoView: a multi-objective experiment's results as `tune best`, the
// dashboard and `tune report` show them (docs/experiment.md, "Several
// objectives"): the Pareto front of the feasible completed trials, the
// hypervolume's reference point, and the hypervolume as trials completed.
//
// A pure function of records already read (Storage::ListTrialSummaries fills
// Trial::values and Trial::constraints), shared by the query commands and
// the dashboard so that all answer alike. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "spec/experiment_spec.h"
#include "storage/storage.h"

namespace tune {

struct ParetoView {
  // Indices into the records of the front: completed, feasible trials with
  // every objective's value that no other such trial dominates (ties all
  // kept), sorted by the first objective (best first), then by number.
  std::vector<size_t> front;
  // Indices of every completed, feasible trial with all its values, by number.
  std::vector<size_t> feasible;
  // Indices of the completed trials that broke a constraint, by number.
  std::vector<size_t> infeasible;
  // The hypervolume's reference point, raw (one value per objective, in
  // the objective's own direction): objective[i].ref where given, else the
  // worst value of that objective among the feasible trials.
  std::vector<double> reference;
  std::vector<bool> reference_given;  // per objective: from objective[i].ref
  // The hypervolume of the front of the feasible trials completed so far,
  // after each one (in trial-number order): (trial number, hypervolume).
  // At most 256 points: with more trials, evenly spaced ones and the last.
  std::vector<std::pair<int, double>> hypervolume_curve;
  double hypervolume = 0;  // of the whole front
};

// `records` ordered by number (as ListTrialSummaries returns them). With one
// objective, the front is the best feasible completed trial(s). Without
// `with_hypervolume`, hypervolume and hypervolume_curve stay empty (0) and
// only the sets and the reference are computed: what a list of experiments
// needs, cheap at any size.
ParetoView ComputeParetoView(const ExperimentSpec& spec, const std::vector<TrialRecord>& records,
                             bool with_hypervolume = true);

// "reference point (eval_loss 2.5 given, adapter_mb 16 the worst feasible
// value)": which reference the hypervolume uses, for the page and `best`.
std::string DescribeReference(const ExperimentSpec& spec, const ParetoView& view);

}  // namespace tune
