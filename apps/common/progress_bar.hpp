#pragma once
/// A progress bar on stderr for long runs: count/total, rate and time left. Drawn only when
/// stderr is a terminal (logs and pipes stay clean), at most 10 times a second.

#include <chrono>
#include <cstdint>
#include <string>

namespace conveyor {

/// Single-threaded: one owner calls update().
class progress_bar {
 public:
  progress_bar(std::string label, std::uint64_t total);
  ~progress_bar();
  progress_bar(const progress_bar&) = delete;
  progress_bar& operator=(const progress_bar&) = delete;

  void update(std::uint64_t done);
  /// Draws the final state and ends the line (also done by the destructor).
  void finish();

 private:
  void draw(std::uint64_t done);

  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::uint64_t last_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace conveyor
