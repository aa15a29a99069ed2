#include "api/batch_source.hpp"
#include "core/base/log.hpp"

namespace conveyor {

/// One epoch of one GPU being walked. The range and its iterators share it, so an iterator
/// outlives the range expression it came from.
struct epoch_range::cursor {
  cursor(std::shared_ptr<batch_stream> s, std::uint64_t e) : stream(std::move(s)), epoch(e) {}

  /// Releases the current batch and takes the next non-empty one of the epoch.
  void advance();
  /// Ends the range with `why`, logged: a loop over the range would otherwise end silently.
  void stop(conveyor::error why);
  /// The range may start (or go on): the GPU is in this epoch.
  bool in_turn();

  std::shared_ptr<batch_stream> stream;
  std::uint64_t epoch;
  batch current;
  bool started = false;
  bool done = false;
  bool complete = false;
  std::optional<conveyor::error> failure;
};

void epoch_range::cursor::stop(conveyor::error why) {
  log("pipeline")->error("epoch {} of {}: {}", epoch, stream ? stream->name() : "?", why.what());
  failure = std::move(why);
  done = true;
}

std::optional<error> out_of_turn(const std::string& name, std::uint64_t epoch, std::uint64_t ended,
                                 std::uint64_t epochs) {
  if (epoch >= epochs) {
    return error{errc::not_found, name + ": epoch " + std::to_string(epoch) +
                                      " does not exist: there are " + std::to_string(epochs) +
                                      " epochs"};
  }
  if (ended < epoch) {
    return error{errc::invalid_argument,
                 name + " is still in epoch " + std::to_string(ended) +
                     ": finish it first (its remaining batches are kept, none was taken)"};
  }
  if (ended > epoch) {
    return error{errc::invalid_argument, "epoch " + std::to_string(epoch) + " of " + name +
                                             " has ended (it is in epoch " + std::to_string(ended) +
                                             ")"};
  }
  return std::nullopt;
}

bool epoch_range::cursor::in_turn() {
  auto why = out_of_turn(stream->name(), epoch, stream->epochs_ended(), stream->epochs());
  if (why) {
    stop(std::move(*why));
  }
  return !why;
}

void epoch_range::cursor::advance() {
  current.release();
  while (!done && in_turn()) {
    auto next = stream->next();
    if (!next) {
      stop(std::move(next).error());
      return;
    }
    complete = next->last_in_epoch();
    done = complete;
    if (next->size() > 0) {
      current = std::move(*next);
      return;
    }
  }
  done = true;
}

epoch_range batch_access::range(std::shared_ptr<batch_stream> stream, std::uint64_t epoch,
                                std::optional<error> failure) {
  auto at = std::make_shared<epoch_range::cursor>(std::move(stream), epoch);
  if (failure) {
    at->stop(std::move(*failure));
  } else {
    at->in_turn();  // an out-of-turn range says so in error() before it is iterated
  }
  return epoch_range(std::move(at));
}

epoch_range::iterator epoch_range::begin() {
  if (!at_->started) {
    at_->started = true;
    at_->advance();
  }
  return iterator(at_);
}

std::optional<error> epoch_range::error() const {
  return at_->failure;
}

bool epoch_range::complete() const noexcept {
  return at_->complete;
}

batch& epoch_range::iterator::operator*() const noexcept {
  return at_->current;
}

bool epoch_range::iterator::at_end() const noexcept {
  return at_ == nullptr || (at_->done && at_->current.size() == 0);
}

epoch_range::iterator& epoch_range::iterator::operator++() {
  at_->advance();
  return *this;
}

}  // namespace conveyor
