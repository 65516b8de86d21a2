#include "storage/trial_schedule.h"

#include <algorithm>

namespace tune {

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
  for (const StoredExploit* e : mine) {
    ScheduleEntry entry;
    entry.step = e->donor_step;
    entry.params = e->after;
    entry.donor = e->donor_number;
    entry.donor_step = e->donor_step;
    entry.at_step = e->step;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace tune
