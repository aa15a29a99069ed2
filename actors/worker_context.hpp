#pragma once
/// What every supervised worker (reader, preprocessor, straggler) gets from its supervisor:
/// its place, its activity slot (what it is working on, read by the supervisor), and the
/// fault plan of drills. And how a worker dies: an exception that escapes a handler is logged
/// and becomes the actor's exit reason, which the supervisor sees.

#include <caf/error.hpp>
#include <caf/sec.hpp>

#include <exception>
#include <memory>
#include <string>

#include "core/base/log.hpp"
#include "core/supervision/activity_slot.hpp"
#include "core/supervision/fault_injector.hpp"

namespace conveyor {

struct worker_context {
  std::int32_t index = 0;
  std::uint32_t generation = 0;  ///< how many times this place was restarted
  std::shared_ptr<activity_slot> slot = std::make_shared<activity_slot>();
  std::shared_ptr<const fault_injector> faults;  ///< null: no injected faults

  std::string name(worker_role role) const { return worker_name(role, index); }
};

/// Installs the exception handler of a worker actor. Call once when it starts.
template <class Self>
void exit_on_exception(Self* self, std::string name) {
  self->set_exception_handler([name](std::exception_ptr& e) -> caf::error {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      log("supervisor")->debug("{} crashed: {}", name, x.what());
      return caf::make_error(caf::sec::runtime_error, std::string(x.what()));
    } catch (...) {
      return caf::make_error(caf::sec::runtime_error, std::string("unknown exception"));
    }
  });
}

}  // namespace conveyor
