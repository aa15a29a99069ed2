#include "apps/common/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace conveyor {

progress_bar::progress_bar(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

progress_bar::~progress_bar() {
  finish();
}

void progress_bar::update(std::uint64_t done) {
  last_done_ = done;
  auto now = std::chrono::steady_clock::now();
  if (enabled_ && now - last_draw_ >= std::chrono::milliseconds(100)) {
    last_draw_ = now;
    draw(done);
  }
}

void progress_bar::finish() {
  if (enabled_ && !finished_) {
    draw(last_done_);
    std::fputc('\n', stderr);
  }
  finished_ = true;
}

void progress_bar::draw(std::uint64_t done) {
  constexpr int width = 30;
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  done = std::min(done, total_);
  double fraction = total_ == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  double left = rate > 0 ? static_cast<double>(total_ - done) / rate : 0.0;
  auto filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\r%s [%.*s%*s] %llu/%llu %.0f/s %.0fs left ", label_.c_str(), filled,
               "##############################", width - filled, "",
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_), rate,
               left);
  std::fflush(stderr);
}

}  // namespace conveyor
