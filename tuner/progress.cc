#include "tuner/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "core/utf8.h"

namespace tune {
namespace {

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Duration(double s) {
  char buf[32];
  int total = static_cast<int>(s);
  if (total >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm%02ds", total / 3600, total / 60 % 60, total % 60);
  else if (total >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", total / 60, total % 60);
  else std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}


// What both sinks print is UTF-8: a message quoting a trial's output may
// hold bytes that are not, which show as U+FFFD (the database keeps them).
void Emit(std::ostream& out, const std::string& text) { out << ValidUtf8(text) << std::flush; }

// Plain lines: one per event, a summary every 10 s.
class LogProgress : public ProgressSink {
 public:
  LogProgress(std::ostream& out, std::string metric) : out_(out), metric_(std::move(metric)) {}
  void OnMessage(const std::string& line) override { Emit(out_, line + "\n"); }
  void OnTrialStarted(const Trial& t) override {
    Emit(out_, "trial " + std::to_string(t.number) + " started" +
                   (t.attempt ? " (attempt " + std::to_string(t.attempt + 1) + ")" : "") + ": " +
                   ParamsShort(t.params) + "\n");
  }
  void OnTrialReport(const Trial&, int64_t, std::optional<double>) override {}
  void OnTrialEnded(const Trial& t, const std::string& message) override {
    std::string line = "trial " + std::to_string(t.number) + " " + TrialStateName(t.state);
    if (t.value) line += ": " + metric_ + " " + Fmt(*t.value);
    if (!t.intermediate.empty()) line += " at step " + std::to_string(t.intermediate.rbegin()->first);
    if (!message.empty() && message != TrialStateName(t.state)) line += " (" + message + ")";
    Emit(out_, line + "\n");
  }
  void OnTick(const History&, const ProgressCounts& c) override {
    if (c.elapsed_s - last_summary_ < 10) return;
    last_summary_ = c.elapsed_s;
    Emit(out_, SummaryLine(c, metric_) + "\n");
  }
  void Finish(const History&, const ProgressCounts& c) override { Emit(out_, SummaryLine(c, metric_) + "\n"); }

 private:
  std::ostream& out_;
  std::string metric_;
  double last_summary_ = 0;
};

// A table redrawn in place: events scroll above it.
class TerminalProgress : public ProgressSink {
 public:
  TerminalProgress(std::ostream& out, std::string metric, bool maximize)
      : out_(out), metric_(std::move(metric)), maximize_(maximize) {}
  void OnMessage(const std::string& line) override { events_.push_back(line); }
  void OnTrialStarted(const Trial&) override {}
  void OnTrialReport(const Trial& t, int64_t step, std::optional<double>) override { last_step_[t.number] = step; }
  void OnTrialEnded(const Trial& t, const std::string& message) override {
    std::string line = "trial " + std::to_string(t.number) + " " + TrialStateName(t.state);
    if (t.value) line += ": " + metric_ + " " + Fmt(*t.value);
    if (!message.empty() && message != TrialStateName(t.state)) line += " (" + message + ")";
    events_.push_back(line);
  }
  void OnTick(const History& trials, const ProgressCounts& c) override {
    // Running trials first, then the most recent finished ones.
    std::vector<const Trial*> rows;
    for (const auto& t : trials)
      if (t.state == TrialState::kRunning) rows.push_back(&t);
    for (auto it = trials.rbegin(); it != trials.rend() && rows.size() < 12; ++it)
      if (it->state != TrialState::kRunning) rows.push_back(&*it);
    Draw(rows, "", c);
  }
  void Finish(const History& trials, const ProgressCounts& c) override {
    std::vector<const Trial*> rows;
    for (const auto& t : trials)
      if (t.state == TrialState::kCompleted && t.value && !std::isnan(*t.value)) rows.push_back(&t);
    std::stable_sort(rows.begin(), rows.end(), [&](const Trial* a, const Trial* b) {
      return maximize_ ? *a->value > *b->value : *a->value < *b->value;
    });
    if (rows.size() > 10) rows.resize(10);
    Draw(rows, rows.empty() ? "" : "best completed trials:\n", c);
    out_ << "\n" << std::flush;
  }

 private:
  void Draw(const std::vector<const Trial*>& rows, const std::string& title, const ProgressCounts& c) {
    std::ostringstream s;
    if (drawn_lines_ > 0) s << "\033[" << drawn_lines_ << "F\033[J";  // up and clear
    for (const auto& e : events_) s << e << "\n";
    events_.clear();
    s << title;
    int lines = title.empty() ? 0 : 1;
    if (!rows.empty()) {
      char head[160];
      std::snprintf(head, sizeof head, "%-6s %-10s %8s %-14s %s", "trial", "state", "step",
                    metric_.substr(0, 14).c_str(), "params");
      s << head << "\n";
      ++lines;
      for (const Trial* t : rows) {
        std::string step = t->intermediate.empty() ? "-" : std::to_string(t->intermediate.rbegin()->first);
        auto ls = last_step_.find(t->number);
        if (ls != last_step_.end() && t->state == TrialState::kRunning) step = std::to_string(ls->second);
        std::string value = t->value ? Fmt(*t->value) : "-";
        std::string params = ParamsShort(t->params);
        if (params.size() > 90) params = params.substr(0, 87) + "...";
        char row[256];
        std::snprintf(row, sizeof row, "%-6d %-10s %8s %-14s %s", t->number, TrialStateName(t->state),
                      step.c_str(), value.c_str(), params.c_str());
        s << row << "\n";
        ++lines;
      }
    }
    s << SummaryLine(c, metric_) << "\n";
    ++lines;
    drawn_lines_ = lines;
    Emit(out_, s.str());
  }

  std::ostream& out_;
  std::string metric_;
  bool maximize_;
  std::vector<std::string> events_;
  std::map<int, int64_t> last_step_;
  int drawn_lines_ = 0;
};

}  // namespace

std::string SummaryLine(const ProgressCounts& c, const std::string& metric) {
  std::ostringstream s;
  const int done = c.completed + c.pruned + c.failed + c.stopped;
  s << done << "/" << c.max_trials << " done (" << c.completed << " completed, " << c.pruned << " pruned, "
    << c.failed << " failed";
  if (c.stopped) s << ", " << c.stopped << " stopped";
  s << "), " << c.running << " running";
  if (c.best_value) s << " | best " << metric << " " << Fmt(*c.best_value) << " (trial " << *c.best_number << ")";
  s << " | " << Duration(c.elapsed_s);
  if (c.finished_this_run > 0 && done < c.max_trials && c.elapsed_s > 0) {
    double left = (c.max_trials - done) * c.elapsed_s / c.finished_this_run;
    if (c.budget_left_s) left = std::min(left, std::max(0.0, *c.budget_left_s));
    s << ", about " << Duration(left) << " left";
  }
  return s.str();
}

std::string ParamsShort(const ParamMap& params) {
  std::string out;
  for (const auto& [name, v] : params) {
    if (!out.empty()) out += " ";
    out += name + "=" + (std::holds_alternative<double>(v) ? Fmt(std::get<double>(v)) : ParamToString(v));
  }
  return out;
}

std::unique_ptr<ProgressSink> MakeLogProgress(std::ostream& out, std::string metric) {
  return std::make_unique<LogProgress>(out, std::move(metric));
}

std::unique_ptr<ProgressSink> MakeTerminalProgress(std::ostream& out, std::string metric, bool maximize) {
  return std::make_unique<TerminalProgress>(out, std::move(metric), maximize);
}

}  // namespace tune
