#pragma once
/// The batcher's handles on the supervised workers, by role and index. Supervisors replace a
/// handle when they restart a worker; a place whose worker is down keeps its old handle until
/// then (the batcher_core knows not to use it).

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

#include <vector>

#include "core/base/worker_role.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct worker_handles {
  std::vector<reader_actor> readers;
  std::vector<preprocessor_actor> preprocessors;
  std::vector<straggler_actor> stragglers;

  worker_handles(int reader_count, int preprocessor_count, int straggler_count)
      : readers(static_cast<std::size_t>(reader_count)),
        preprocessors(static_cast<std::size_t>(preprocessor_count)),
        stragglers(static_cast<std::size_t>(straggler_count)) {}

  void set(worker_role role, int index, const caf::actor& handle) {
    auto i = static_cast<std::size_t>(index);
    switch (role) {
      case worker_role::reader:
        readers.at(i) = caf::actor_cast<reader_actor>(handle);
        break;
      case worker_role::preprocessor:
        preprocessors.at(i) = caf::actor_cast<preprocessor_actor>(handle);
        break;
      case worker_role::straggler:
        stragglers.at(i) = caf::actor_cast<straggler_actor>(handle);
        break;
    }
  }
};

}  // namespace conveyor
