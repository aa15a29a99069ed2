#include "core/cluster/peer_pace.hpp"

#include <algorithm>

namespace conveyor {
namespace {

constexpr int longest_rest_factor = 32;

}  // namespace

peer_pace::peer_pace(std::chrono::milliseconds deadline, std::chrono::milliseconds rest)
    : deadline_(deadline), first_rest_(rest), next_rest_(rest) {}

void peer_pace::answered(clock::duration took, clock::time_point now) {
  typical_ = (typical_ * 3 + std::min<clock::duration>(took, deadline_)) / 4;
  if (!slow()) {
    next_rest_ = first_rest_;
    return;
  }
  // A fast answer rests no peer (it is on its way back); and fetches asked before a rest
  // began may still answer during it.
  if (took * 2 > deadline_ && ready(now)) {
    slow_rests_ += 1;
    rest(now);
  }
}

void peer_pace::struck(clock::time_point now) {
  typical_ = (typical_ * 3 + deadline_) / 4;
  if (ready(now)) {
    rest(now);
  }
}

void peer_pace::rest(clock::time_point now) {
  rest_until_ = now + next_rest_;
  next_rest_ = std::min(next_rest_ * 2, first_rest_ * longest_rest_factor);
}

}  // namespace conveyor
