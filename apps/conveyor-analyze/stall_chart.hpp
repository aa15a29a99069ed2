#pragma once
/// conveyor-analyze --plot: one PNG with two panels, the predicted stall (or, for a trainer
/// that takes no time, the predicted samples/s) against the number of preprocessors and
/// against the cached fraction of the dataset; measured points are filled dots, extrapolated
/// ones hollow. Drawn with OpenCV.

#include <filesystem>

#include "apps/conveyor-analyze/analysis_report.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// Writes the chart to `file` (PNG). io_error naming the file when it cannot be written.
expected<void> write_stall_chart(const std::filesystem::path& file, const analysis_inputs& in,
                                 const analysis_result& out);

}  // namespace conveyor
