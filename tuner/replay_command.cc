// `tune replay`: an experiment.json that replays one trial's schedule of
// parameters on one trial, as Ray Tune's PopulationBasedTrainingReplay
// (python/ray/tune/schedulers/pbt.py, _load_policy and on_trial_result):
// the schedule that produced the trial's weights is its lineage (after an
// exploit, the weights up to the donor's checkpoint were trained with the
// donor's schedule), and the replay changes the parameters of its single
// trial at each step of that schedule, continuing from its own checkpoint
// (docs/experiment.md, "Replaying a trial's schedule").
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "dashboard/results_query.h"
#include "storage/trial_schedule.h"
#include "tuner/cli_commands.h"
#include "tuner/cli_common.h"
#include "tuner/report.h"

namespace tune {
namespace {

using namespace cli;
using Json = nlohmann::ordered_json;

// The schedule that trained trial `t`'s weights as they were just before
// exploit `before_id` (every exploit when it is 0), up to its checkpoint at
// `upto` (entries from steps below it; none when unset). Ray's
// _load_policy follows the same chain backwards from the last exploit.
std::vector<ScheduleEntry> Lineage(TrialId t, int64_t before_id, std::optional<int64_t> upto,
                                   const std::map<TrialId, const Trial*>& trials,
                                   const std::map<TrialId, std::vector<StoredExploit>>& by_trial) {
  auto it = by_trial.find(t);
  const std::vector<StoredExploit> none;
  const std::vector<StoredExploit>& all = it == by_trial.end() ? none : it->second;
  const StoredExploit* last = nullptr;
  for (const StoredExploit& x : all)
    if (before_id == 0 || x.id < before_id) last = &x;
  std::vector<ScheduleEntry> out;
  if (last == nullptr) {
    // No exploit yet: the trial's first parameters from step 0.
    out.push_back(TrialScheduleOf(*trials.at(t), all).front());
  } else {
    // Exploits only go back in time (donor's exploits recorded earlier), so
    // this ends.
    out = Lineage(last->donor_id, last->id, last->donor_step, trials, by_trial);
    out.push_back(ScheduleEntryOf(*last));
  }
  if (upto) {
    std::vector<ScheduleEntry> kept;
    for (ScheduleEntry& e : out)
      if (kept.empty() || e.step < *upto) kept.push_back(std::move(e));
    out = std::move(kept);
  }
  // A change at the same step as the one before replaces it.
  std::vector<ScheduleEntry> merged;
  for (ScheduleEntry& e : out) {
    if (!merged.empty() && merged.back().step == e.step) merged.back() = std::move(e);
    else merged.push_back(std::move(e));
  }
  return merged;
}

}  // namespace

int ReplayCommand(const ReplayArgs& args, std::ostream& out, std::ostream& err) {
  auto storage_or = OpenExisting(args.db_path);
  if (!storage_or.ok()) return Fail(err, storage_or.status());
  Storage& storage = **storage_or;
  auto e = ResolveExperiment(storage, args.experiment);
  if (!e.ok()) return Fail(err, e.status());
  auto records = storage.ListTrialSummaries(e->id);
  if (!records.ok()) return Fail(err, records.status());
  std::map<TrialId, const Trial*> trials;
  const Trial* chosen = nullptr;
  for (const TrialRecord& r : *records) {
    trials[r.trial.id] = &r.trial;
    if (r.trial.number == args.trial) chosen = &r.trial;
  }
  if (chosen == nullptr) {
    return Fail(err, Status::NotFound("experiment '" + e->name + "' has no trial " + std::to_string(args.trial)));
  }
  auto exploits = storage.ListExploits(e->id);
  if (!exploits.ok()) return Fail(err, exploits.status());
  const auto by_trial = ExploitsByTrial(std::move(*exploits));
  const std::vector<ScheduleEntry> lineage = Lineage(chosen->id, 0, std::nullopt, trials, by_trial);

  Json spec;
  try {
    spec = Json::parse(e->spec_json);
  } catch (const Json::exception&) {
  }
  if (!spec.is_object()) {
    return Fail(err, Status::InvalidArgument("the stored experiment.json of '" + e->name + "' is not a JSON object"));
  }
  // Checked as `tune run` would read it, so that what is written runs.
  auto parsed = ParseExperimentSpec(e->spec_json, "experiment '" + e->name + "'");
  if (!parsed.ok()) {
    return Fail(err, Status::InvalidArgument("the stored spec of experiment '" + e->name +
                                             "' does not parse here: " + parsed.status().message()));
  }
  spec["name"] = e->name + "-replay-trial-" + std::to_string(args.trial);
  // One trial, its parameters fixed to the schedule's first ones.
  Json search = {{"algorithm", "random"}, {"seed", e->seed}};
  search["points_to_evaluate"] = Json::array({ParamsJson(lineage.front().params)});
  spec["search"] = search;
  Json limits = spec.contains("limits") && spec["limits"].is_object() ? spec["limits"] : Json::object();
  limits["max_trials"] = 1;
  limits["max_concurrent_trials"] = 1;
  spec["limits"] = limits;
  const SchedulerSpec& old = parsed->scheduler;
  Json scheduler = {{"type", lineage.size() > 1 ? "replay" : "fifo"}, {"time_attr", old.time_attr}};
  if (lineage.size() > 1) {
    scheduler["max_t"] = old.max_t;
    Json changes = Json::array();
    for (size_t i = 1; i < lineage.size(); ++i) {
      changes.push_back({{"step", lineage[i].step}, {"params", ParamsJson(lineage[i].params)}});
    }
    scheduler["schedule"] = changes;
  }
  spec["scheduler"] = scheduler;
  const std::string text = DumpJson(spec, 2) + "\n";
  if (args.out_path.empty()) {
    out << text;
  } else {
    std::ofstream f(args.out_path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) return Fail(err, Status::Internal(args.out_path + ": could not be written"), kExitFailed);
  }
  err << "tune: trial " << args.trial << " of '" << e->name << "': "
      << (lineage.size() > 1 ? "a schedule of " + std::to_string(lineage.size()) +
                                   " entries (its lineage through the donors' checkpoints)"
                             : std::string("no exploit in its lineage; the experiment re-runs its parameters"))
      << "\n"
      << ScheduleText(lineage, "  ");
  return kExitOk;
}

}  // namespace tune
