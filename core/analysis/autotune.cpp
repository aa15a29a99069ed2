#include "core/analysis/autotune.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace conveyor::analysis {
namespace {

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * share);
  return text;
}

std::string rate_text(double rate) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f samples/s", rate);
  return text;
}

std::string cores_text(double cores) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", cores);
  return text;
}

// "+12.3%" of `after` over `before`.
std::string change_text(double before, double after) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", before > 0 ? 100 * (after / before - 1) : 0.0);
  return text;
}

// The busy share of a pool of `count` busy `share` of their time, after one fewer takes their
// work (1 and more for a pool of one: none can go).
double busy_after_one_fewer(double share, int count) {
  return count > 1 ? share * count / (count - 1) : 1;
}

}  // namespace

std::string describe(const tuning& t) {
  return "preprocessors=" + std::to_string(t.preprocessors) +
         " stragglers=" + std::to_string(t.stragglers) + " readers=" + std::to_string(t.readers) +
         " window=" + std::to_string(t.window);
}

autotuner::autotuner(tuning start, tuning least, tuning most, autotune_settings settings)
    : least_(least), most_(most), settings_(settings) {
  least_.window = std::max<std::uint64_t>(least_.window, 1);
  counts_ = clamp(start);
  start_window_ = counts_.window;
  settling_ = settings_.settle_intervals;
}

tuning autotuner::clamp(tuning t) const noexcept {
  t.preprocessors = std::clamp(t.preprocessors, least_.preprocessors, most_.preprocessors);
  t.stragglers = std::clamp(t.stragglers, least_.stragglers, most_.stragglers);
  t.readers = std::clamp(t.readers, least_.readers, most_.readers);
  t.window = std::clamp(t.window, least_.window, most_.window);
  return t;
}

tuning autotuner::moved(knob k, int step) const noexcept {
  auto t = counts_;
  switch (k) {
    case knob::preprocessors: {
      t.preprocessors =
          std::clamp(t.preprocessors + step, least_.preprocessors, most_.preprocessors);
      const int moved_by = t.preprocessors - counts_.preprocessors;
      t.stragglers = t.preprocessors;
      const auto follow =
          static_cast<std::uint64_t>(std::abs(moved_by)) * settings_.window_per_worker;
      t.window = moved_by >= 0 ? t.window + follow : t.window - std::min(t.window, follow);
      break;
    }
    case knob::readers:
      t.readers += step;
      break;
    case knob::window:
      t.window = step > 0 ? static_cast<std::uint64_t>(
                                std::ceil(static_cast<double>(t.window) * settings_.window_step))
                          : static_cast<std::uint64_t>(
                                std::floor(static_cast<double>(t.window) / settings_.window_step));
      break;
    case knob::count:
      break;
  }
  auto out = clamp(t);
  // A knob at its bound moves nothing: its followers stay too.
  if (k == knob::preprocessors && out.preprocessors == counts_.preprocessors) {
    return counts_;
  }
  return out;
}

std::optional<tuning_change> autotuner::observe(const tuning_reading& r) {
  if (settling_ > 0) {
    --settling_;
    return std::nullopt;
  }
  if (current_.readings == 0 && r.samples == 0) {
    return std::nullopt;  // nothing prepared yet: workers starting, nothing to judge
  }
  current_.add(r);
  if (current_.readings < settings_.judge_intervals || current_.seconds <= 0) {
    return std::nullopt;
  }
  recent_.push_back(current_);
  current_ = {};
  if (recent_.size() > static_cast<std::size_t>(settings_.history)) {
    recent_.erase(recent_.begin());
  }
  return judge();
}

void autotuner::measure::add(const tuning_reading& r) noexcept {
  const auto& f = r.figures;
  seconds += f.seconds;
  wait_s += f.trainer_wait_s;
  trainers = std::max(1, f.trainers);
  prep_s += f.prep_busy_s;
  read_s += f.read_busy_s;
  full_s += f.window_full_s;
  other_cpu_s += r.other_cpu * f.seconds;
  samples += r.samples;
  cores = r.cores;
  memory_short = memory_short || r.memory_short;
  ++readings;
}

void autotuner::measure::add(const measure& o) noexcept {
  seconds += o.seconds;
  wait_s += o.wait_s;
  trainers = o.trainers;
  prep_s += o.prep_s;
  read_s += o.read_s;
  full_s += o.full_s;
  other_cpu_s += o.other_cpu_s;
  samples += o.samples;
  cores = o.cores;
  memory_short = memory_short || o.memory_short;
  readings += o.readings;
}

autotuner::measure autotuner::pooled(std::size_t last) const {
  measure m;
  for (auto it = recent_.end() - static_cast<std::ptrdiff_t>(std::min(last, recent_.size()));
       it != recent_.end(); ++it) {
    m.add(*it);
  }
  return m;
}

double autotuner::noise() const {
  if (recent_.size() < 2) {
    return 0;
  }
  double mean = 0;
  for (const auto& m : recent_) {
    mean += m.rate();
  }
  mean /= static_cast<double>(recent_.size());
  double var = 0;
  for (const auto& m : recent_) {
    var += (m.rate() - mean) * (m.rate() - mean);
  }
  var /= static_cast<double>(recent_.size() - 1);
  return mean > 0 ? std::sqrt(var) / mean : 0;
}

std::optional<tuning_change> autotuner::judge() {
  for (auto& k : rest_) {
    for (auto& d : k) {
      d = std::max(0, d - 1);
    }
  }
  if (note_load(recent_.back()) && trial_) {
    // The machine changed under the trial: its rate says nothing of the counts. Back to where
    // it began, with no rest: the next decision is made on the machine as it is now.
    const auto before = trial_->before;
    trial_.reset();
    return apply(before, "the load of other processes moved to " +
                             cores_text(recent_.back().other_cpu()) +
                             " cores during the trial: taken back, without judgement");
  }
  if (recheck_ && !trial_) {
    if (auto c = recheck_verdict()) {
      return c;
    }
  }
  if (trial_) {
    if (recent_.size() == 1 && clearly_worse(recent_.back())) {
      const auto first = recent_.back();  // settle_trial clears recent_
      return settle_trial(first);
    }
    if (recent_.size() < static_cast<std::size_t>(settings_.trial_judgements)) {
      return std::nullopt;
    }
    return settle_trial(pooled(static_cast<std::size_t>(settings_.trial_judgements)));
  }
  if (recent_.size() < static_cast<std::size_t>(settings_.baseline_judgements) &&
      !recent_.back().memory_short) {
    return std::nullopt;
  }
  return decide(pooled(recent_.size()));
}

bool autotuner::clearly_worse(const measure& m) const noexcept {
  const double drop = std::max(settings_.early_loss, 3 * trial_->noise);
  return m.rate() < trial_->baseline.rate() * (1 - drop);
}

bool autotuner::note_load(const measure& m) noexcept {
  if (std::abs(m.other_cpu() - load_at_rest_) < settings_.load_shift) {
    return false;
  }
  end_rests();
  load_at_rest_ = m.other_cpu();
  // The judgements before the shift are of another machine: the baseline starts again.
  recent_.erase(recent_.begin(), recent_.end() - 1);
  return true;
}

bool autotuner::resting(knob k, int step) const noexcept {
  return rest_[static_cast<int>(k)][step > 0 ? 1 : 0] > 0;
}

void autotuner::rest(knob k, int step) noexcept {
  auto& failed = failures_[static_cast<int>(k)][step > 0 ? 1 : 0];
  rest_[static_cast<int>(k)][step > 0 ? 1 : 0] = settings_.rest_judgements << std::min(failed, 3);
  ++failed;
}

void autotuner::end_rests() noexcept {
  for (int k = 0; k < static_cast<int>(knob::count); ++k) {
    rest_[k][0] = rest_[k][1] = failures_[k][0] = failures_[k][1] = 0;
  }
  recheck_.reset();
}

std::optional<tuning_change> autotuner::recheck_verdict() {
  const auto r = *recheck_;
  recheck_.reset();
  const double now = recent_.back().rate();
  if (r.before <= 0 || std::abs(now / r.before - 1) <= r.bar) {
    return std::nullopt;  // the baseline held: the verdict stands
  }
  const int k = static_cast<int>(r.what);
  rest_[k][1] = 0;
  failures_[k][1] = 1;  // voided once: the next take-back rests, twice as long
  recent_.erase(recent_.begin(), recent_.end() - 1);
  return tuning_change{counts_, "the rate at these counts moved " + rate_text(r.before) + " -> " +
                                    rate_text(now) + " (" + change_text(r.before, now) +
                                    ") across the trial, more than the " + percent(r.bar) +
                                    " it had to clear: the machine drifted, the verdict is void "
                                    "and the growth may be tried again"};
}

std::optional<tuning_change> autotuner::settle_trial(const measure& m) {
  const auto t = *trial_;
  trial_.reset();
  const double r0 = t.baseline.rate();
  const double r1 = m.rate();
  const double w0 = t.baseline.wait();
  const double w1 = m.wait();
  // A growth must beat the noise the baseline's judgements showed, too.
  const double gain = std::max(settings_.gain, 2 * t.noise);
  const bool kept =
      t.step > 0 ? r1 > r0 * (1 + gain) ||
                       (w0 > wait_threshold && w1 <= w0 / 2 && r1 >= r0 * (1 - settings_.loss))
                 : r1 >= r0 * (1 - settings_.loss) && w1 <= std::max(wait_threshold, w0 + 0.01);
  const std::string what =
      t.what == knob::window ? (t.step > 0 ? "a larger window" : "a smaller window")
                             : (t.step > 0 ? "one more " : "one fewer ") +
                                   std::string(t.what == knob::readers ? "reader" : "preprocessor");
  const std::string figures = rate_text(r0) + " -> " + rate_text(r1) + " (" + change_text(r0, r1) +
                              "), the trainers waiting " + percent(w0) + " -> " + percent(w1);
  if (kept) {
    end_rests();  // the counts are others now
    return tuning_change{counts_, what + " kept: " + figures};
  }
  if (t.step > 0 && failures_[static_cast<int>(t.what)][1] == 0) {
    recheck_ = recheck{t.what, r0, gain};
  }
  rest(t.what, t.step);
  load_at_rest_ = m.other_cpu();
  auto back = apply(
      t.before, what + " taken back: " + figures +
                    (t.step > 0 ? " (a growth stays above +" : " (a shrink stays above -") +
                    percent(t.step > 0 ? gain : settings_.loss) +
                    (t.step > 0 && gain > settings_.gain ? ": twice the baseline's noise)" : ")"));
  recent_ = t.judged;  // back to counts already judged, on the same machine
  return back;
}

std::optional<tuning_change> autotuner::decide(const measure& m) {
  const interval_figures f{m.seconds, m.wait_s,        m.trainers, m.prep_s, counts_.preprocessors,
                           m.read_s,  counts_.readers, m.full_s};
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", m.seconds);
  const auto now = "the trainers waited " + percent(f.wait_share()) + " of the last " +
                   std::string(seconds) + " at " + rate_text(m.rate()) + "; preprocessors busy " +
                   percent(f.prep_share()) + ", readers " + percent(f.read_share()) +
                   ", the window full " + percent(std::min(1.0, f.window_full_share())) +
                   ", other processes on " + cores_text(m.other_cpu()) + " of " +
                   std::to_string(static_cast<int>(m.cores)) + " cores";
  if (m.memory_short) {  // not a trial: memory comes first
    auto next = moved(knob::window, -1);
    if (next == counts_) {
      return std::nullopt;
    }
    return apply(next, now + "; the machine short of memory: a smaller window");
  }
  if (f.wait_share() > wait_threshold) {
    const auto bound = classify(f);
    if (bound == bottleneck::window) {
      if (auto c =
              try_step(knob::window, +1, m, now + " (window-bound): a larger window, on trial")) {
        return c;
      }
    }
    if (bound == bottleneck::fetch) {
      return try_step(knob::readers, +1, m, now + " (fetch-bound): one more reader, on trial");
    }
    return try_preprocessors(f, m, now + " (" + std::string(bound_name(bound)) + ")");
  }
  if (busy_after_one_fewer(f.prep_share(), counts_.preprocessors) < settings_.shrink_below) {
    if (auto c = try_step(knob::preprocessors, -1, m,
                          now + ": the preprocessors idle, one fewer, on trial")) {
      return c;
    }
  }
  if (busy_after_one_fewer(f.read_share(), counts_.readers) < settings_.shrink_below) {
    if (auto c = try_step(knob::readers, -1, m, now + ": the readers idle, one fewer, on trial")) {
      return c;
    }
  }
  if (f.window_full_share() <= 0 && counts_.window > start_window_) {
    return try_step(knob::window, -1, m, now + ": the window never full, smaller, on trial");
  }
  return std::nullopt;
}

std::optional<tuning_change> autotuner::try_preprocessors(const interval_figures& f,
                                                          const measure& m,
                                                          const std::string& now) {
  const int free_cores = std::max(1, static_cast<int>(std::lround(m.cores - m.other_cpu())));
  const bool every_core = counts_.preprocessors >= free_cores;
  const bool busy = f.prep_share() >= saturated;
  const bool window_bound = classify(f) == bottleneck::window;
  if (!every_core || busy) {
    if (auto c = try_step(knob::preprocessors, +1, m, now + ": one more preprocessor, on trial")) {
      return c;
    }
  }
  // Past the cores even on an idle machine: what does one fewer cost?
  if (counts_.preprocessors > static_cast<int>(m.cores)) {
    return try_step(knob::preprocessors, -1, m,
                    now + ": more preprocessors than cores, one fewer, on trial");
  }
  if (every_core && !busy && window_bound) {
    return try_step(knob::preprocessors, -1, m,
                    now + ": preprocessors on every core left yet idle " +
                        percent(1 - f.prep_share()) +
                        " of their time (the other stages short of CPU): one fewer, on trial");
  }
  return std::nullopt;
}

std::optional<tuning_change> autotuner::try_step(knob k, int step, const measure& m,
                                                 std::string why) {
  if (resting(k, step)) {
    return std::nullopt;
  }
  auto next = moved(k, step);
  if (next == counts_) {
    return std::nullopt;
  }
  trial_ = trial{k, step, counts_, m, noise(), recent_};
  return apply(next, std::move(why));
}

tuning_change autotuner::apply(tuning next, std::string reason) {
  counts_ = next;
  ++changes_;
  current_ = {};
  recent_.clear();
  settling_ = settings_.settle_intervals;
  return {next, std::move(reason)};
}

}  // namespace conveyor::analysis
