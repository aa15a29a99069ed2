#include "actors/supervisor.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "core/base/log.hpp"

namespace conveyor {
namespace {

struct child {
  caf::actor handle;
  worker_context context;
  bool down = false;       ///< failed; its restart is pending
  std::size_t streak = 0;  ///< failures in a row without a completed attempt in between
};

struct supervisor_state {
  static inline const char* name = "supervisor";
  std::vector<child> children;
  std::unique_ptr<restart_budget> budget;
  bool escalated = false;
};

using supervisor_pointer = caf::stateful_actor<supervisor_state>*;

std::string describe(const supervisor_options& opts, const child& c) {
  return c.context.name(opts.role) + " (generation " + std::to_string(c.context.generation) + ")";
}

void start_child(supervisor_pointer self, const supervisor_options& opts, int index) {
  auto& c = self->state.children[static_cast<std::size_t>(index)];
  c.context.slot = std::make_shared<activity_slot>();  // one per generation
  c.context.faults = opts.faults;
  c.handle = opts.spawn(c.context);
  c.down = false;
  self->monitor(c.handle);
  self->send(opts.batcher, atoms::worker_up::value, static_cast<std::int32_t>(opts.role),
             static_cast<std::int32_t>(index), c.handle);
}

// The children that go down with child `failed`, by the strategy.
std::vector<int> group_of(restart_strategy strategy, int failed, int children) {
  std::vector<int> out;
  int first = strategy == restart_strategy::one_for_all ? 0 : failed;
  int last = strategy == restart_strategy::one_for_one ? failed : children - 1;
  for (int i = first; i <= last; ++i) {
    out.push_back(i);
  }
  return out;
}

// Stops child `index` (a no-op when it is dead already), wakes an injected delay, and has the
// batcher issue its samples again.
void take_down(supervisor_pointer self, const supervisor_options& opts, int index,
               std::uint64_t culprit, const std::string& reason) {
  auto& c = self->state.children[static_cast<std::size_t>(index)];
  c.down = true;
  c.streak = c.context.slot->completed() > 0 ? 0 : c.streak + 1;
  c.context.slot->abandon();
  self->send_exit(c.handle, caf::exit_reason::kill);
  self->send(opts.batcher, atoms::worker_down::value, static_cast<std::int32_t>(opts.role),
             static_cast<std::int32_t>(index), culprit, c.context.slot->last_done(), reason);
}

void escalate(supervisor_pointer self, const supervisor_options& opts, const std::string& last) {
  const auto& r = opts.settings.restart;
  auto why = std::string(to_string(opts.role)) + " supervisor gave up: more than " +
             std::to_string(r.max_restarts) + " restarts within " +
             std::to_string(r.period.count()) +
             " ms (supervision.max_restarts, supervision.restart_period_s); last failure: " + last;
  log("supervisor")->error("{}", why);
  self->state.escalated = true;
  opts.status->fail(error{errc::worker_failed, why});
  for (auto& c : self->state.children) {
    c.context.slot->abandon();
    self->send_exit(c.handle, caf::exit_reason::kill);
  }
  self->quit(caf::make_error(caf::sec::runtime_error, why));
}

void on_failure(supervisor_pointer self, const supervisor_options& opts, int index,
                const std::string& what, std::uint64_t culprit) {
  auto& st = self->state;
  if (st.escalated) {
    return;
  }
  auto failed = describe(opts, st.children[static_cast<std::size_t>(index)]) + " " + what;
  auto group = group_of(opts.settings.strategy, index, static_cast<int>(st.children.size()));
  for (int j : group) {
    if (!st.children[static_cast<std::size_t>(j)].down) {
      take_down(self, opts, j, j == index ? culprit : 0, failed);
    }
  }
  auto delay = st.budget->on_failure(std::chrono::steady_clock::now(),
                                     st.children[static_cast<std::size_t>(index)].streak);
  if (!delay) {
    escalate(self, opts, failed);
    return;
  }
  log("supervisor")
      ->warn("{}; restarting {} worker(s) ({}) in {} ms", failed, group.size(),
             to_string(opts.settings.strategy), delay->count());
  for (int j : group) {
    self->delayed_send(self, *delay, atoms::restart::value, static_cast<std::int32_t>(j),
                       st.children[static_cast<std::size_t>(j)].context.generation);
  }
}

void restart(supervisor_pointer self, const supervisor_options& opts, std::int32_t index,
             std::uint32_t generation) {
  auto& c = self->state.children[static_cast<std::size_t>(index)];
  if (!c.down || c.context.generation != generation) {
    return;
  }
  ++c.context.generation;
  start_child(self, opts, index);
  opts.status->count_restart();
  log("supervisor")->info("{} started", describe(opts, c));
}

void on_down(supervisor_pointer self, const supervisor_options& opts, const caf::down_msg& dm) {
  auto& kids = self->state.children;
  auto it = std::find_if(kids.begin(), kids.end(), [&](const child& c) {
    return !c.down && c.handle.address() == dm.source;
  });
  if (it != kids.end()) {
    on_failure(self, opts, static_cast<int>(it - kids.begin()),
               "exited: " + self->system().render(dm.reason), it->context.slot->attempt());
  }
}

std::chrono::milliseconds hang_check_interval(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 4, std::chrono::milliseconds(5), std::chrono::milliseconds(1000));
}

// A child busy with one sample past the deadline is hung: it is treated as failed.
void check_hangs(supervisor_pointer self, const supervisor_options& opts) {
  auto timeout = opts.settings.hang_timeout;
  auto& kids = self->state.children;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    const auto& slot = *kids[i].context.slot;
    if (!kids[i].down && slot.busy_for() > timeout) {
      opts.status->count_hang();
      on_failure(self, opts, static_cast<int>(i),
                 "hung: busy with one sample for more than " + std::to_string(timeout.count()) +
                     " ms (supervision.hang_timeout_ms)",
                 slot.attempt());
    }
  }
  self->delayed_send(self, hang_check_interval(timeout), atoms::tick::value);
}

caf::behavior supervisor(supervisor_pointer self, supervisor_options opts) {
  auto& st = self->state;
  st.budget = std::make_unique<restart_budget>(opts.settings.restart);
  st.children.resize(static_cast<std::size_t>(opts.children));
  for (int i = 0; i < opts.children; ++i) {
    st.children[static_cast<std::size_t>(i)].context.index = i;
    start_child(self, opts, i);
  }
  self->set_down_handler([self, opts](caf::down_msg& dm) { on_down(self, opts, dm); });
  // The pipeline's shutdown: the children stop with the supervisor.
  self->set_exit_handler([self](caf::exit_msg& em) {
    for (auto& c : self->state.children) {
      c.context.slot->abandon();
      self->send_exit(c.handle, em.reason);
    }
    self->quit(em.reason);
  });
  if (opts.settings.hang_timeout.count() > 0) {
    self->delayed_send(self, hang_check_interval(opts.settings.hang_timeout), atoms::tick::value);
  }
  return {
      [self, opts](atoms::restart, std::int32_t index, std::uint32_t generation) {
        restart(self, opts, index, generation);
      },
      [self, opts](atoms::tick) { check_hangs(self, opts); },
  };
}

}  // namespace

caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_options options) {
  return sys.spawn(supervisor, std::move(options));
}

}  // namespace conveyor
