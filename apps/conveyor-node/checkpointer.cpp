#include "apps/conveyor-node/checkpointer.hpp"

#include "core/base/log.hpp"

namespace conveyor {

expected<checkpointer> checkpointer::start(const pipeline& p, std::filesystem::path file,
                                           std::uint64_t every) {
  checkpointer c(p, std::move(file), every);
  std::lock_guard<std::mutex> lock(c.mutex_);
  if (!c.write_locked()) {
    return *c.failure_;
  }
  return checkpointer(std::move(c));
}

checkpointer::checkpointer(checkpointer&& other) noexcept
    : pipeline_(other.pipeline_),
      file_(std::move(other.file_)),
      every_(other.every_),
      batches_(other.batches_),
      failure_(std::move(other.failure_)) {}

bool checkpointer::write_locked() {
  if (failure_) {
    return false;
  }
  auto state = pipeline_->state();
  if (auto saved = state.save(file_); !saved) {
    failure_ = error{saved.error().code(), "--checkpoint " + saved.error().message()};
    log("node")->error("{}", failure_->what());
    return false;
  }
  log("node")->debug("checkpoint {} written after {} batches ({} bytes)", file_.string(), batches_,
                     state.bytes.size());
  return true;
}

bool checkpointer::on_batch() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++batches_ % every_ != 0 ? !failure_ : write_locked();
}

bool checkpointer::write_now() {
  std::lock_guard<std::mutex> lock(mutex_);
  return write_locked();
}

std::optional<error> checkpointer::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

}  // namespace conveyor
