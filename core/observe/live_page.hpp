#pragma once
/// The live page at / ([monitor] metrics): the pipeline as its actors (reader -> preprocessors
/// -> stragglers -> batcher -> feeders -> trainers), each with its mailbox, rate and latency,
/// the trainers' stall over time and the live diagnosis's last line, redrawn every second from
/// /state.json (core/observe/node_state.hpp). One static HTML file (core/observe/live_page.html)
/// built into the binary: nothing is fetched from anywhere else.

#include <string_view>

namespace conveyor {

/// The page's HTML, as built in.
std::string_view live_page_html() noexcept;

}  // namespace conveyor
