#include "storage/trial_schedule.h"

#include <algorithm>

namespace tune {

ScheduleEntry ScheduleEntryOf(const StoredExploit& exploit) {
  ScheduleEntry entry;
  entry.step = exploit.donor_step;
  entry.params = exploit.after;
  entry.donor = exploit.donor_number;
  entry.donor_step = exploit.donor_step;
  entry.at_step = exploit.step;
  return entry;
}

std::vector<ScheduleEntry> TrialScheduleOf(const Trial& trial, const std::vector<StoredExploit>& exploits) {
  std::vector<const StoredExploit*> mine;
  for (const StoredExploit& e : exploits)
    if (e.trial_id == trial.id) mine.push_back(&e);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const StoredExploit* a, const StoredExploit* b) { return a->id < b->id; });
  std::vector<ScheduleEntry> out;
  ScheduleEntry first;
  first.params = mine.empty() ? trial.params : mine.front()->before;
  out.push_back(std::move(first));
  for (const StoredExploit* e : mine) out.push_back(ScheduleEntryOf(*e));
  return out;
}

}  // namespace tune
