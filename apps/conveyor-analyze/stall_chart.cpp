#include "apps/conveyor-analyze/stall_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace conveyor {
namespace {

const cv::Scalar ink(40, 40, 40);
const cv::Scalar grid(225, 225, 225);
const cv::Scalar line_colour(200, 110, 30);  // BGR: a blue
constexpr int panel_w = 520;
constexpr int panel_h = 400;
constexpr int margin = 60;

struct point {
  double x = 0;
  double y = 0;
  bool measured = false;
};

// What a panel plots: the stall in percent, or samples/s when the trainer takes no time.
double value_of(const analysis::prediction& p) {
  return p.stall_fraction ? 100.0 * *p.stall_fraction : p.samples_per_s;
}

std::string label_of(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.45) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, ink, 1, cv::LINE_AA);
}

// One panel at `origin`: axes, a few grid lines, the curve and its points.
// `y_floor`: the least height of the y axis (a flat zero curve still gets readable ticks).
void panel(cv::Mat& img, cv::Point origin, const std::string& title, const std::string& x_name,
           const std::string& y_name, const std::vector<point>& pts, double y_floor) {
  double x_max = 0;
  double y_max = 0;
  for (const auto& p : pts) {
    x_max = std::max(x_max, p.x);
    y_max = std::max(y_max, p.y);
  }
  y_max = std::max(y_max * 1.1, y_floor);
  const cv::Point o(origin.x + margin, origin.y + panel_h - margin);
  const int w = panel_w - margin - 20;
  const int h = panel_h - 2 * margin;
  auto at = [&](double x, double y) {
    return cv::Point(o.x + static_cast<int>(x / std::max(x_max, 1e-9) * w),
                     o.y - static_cast<int>(y / y_max * h));
  };
  for (int i = 0; i <= 4; ++i) {
    const double y = y_max * i / 4;
    cv::line(img, at(0, y), at(x_max, y), grid, 1);
    text(img, label_of(y), at(0, y) + cv::Point(-52, 4), 0.4);
  }
  for (double x : {0.0, x_max / 2, x_max}) {
    text(img, label_of(x), at(x, 0) + cv::Point(-8, 18), 0.4);
  }
  cv::line(img, o, cv::Point(o.x + w, o.y), ink, 1);
  cv::line(img, o, cv::Point(o.x, o.y - h), ink, 1);
  text(img, title, origin + cv::Point(margin, 30), 0.55);
  text(img, x_name, cv::Point(o.x + w / 2 - 60, o.y + 40));
  text(img, y_name, origin + cv::Point(8, margin - 12), 0.4);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    cv::line(img, at(pts[i - 1].x, pts[i - 1].y), at(pts[i].x, pts[i].y), line_colour, 2,
             cv::LINE_AA);
  }
  for (const auto& p : pts) {
    cv::circle(img, at(p.x, p.y), 4, line_colour, p.measured ? cv::FILLED : 1, cv::LINE_AA);
  }
}

}  // namespace

expected<void> write_stall_chart(const std::filesystem::path& file, const analysis_inputs& in,
                                 const analysis_result& out) {
  const bool stall = std::isfinite(in.ingestion);
  const std::string y_name = stall ? "predicted stall, % of the trainer's time" : "samples/s";
  std::vector<point> by_workers;
  for (std::size_t i = 0; i < out.by_preprocessors.size(); ++i) {
    const auto& r = out.by_preprocessors[i];
    by_workers.push_back({static_cast<double>(i + 1), value_of(r.outcome), !r.extrapolated});
  }
  std::vector<point> by_cache;
  for (std::size_t i = 0; i < out.by_cache_fraction.size(); ++i) {
    const double x = static_cast<double>(i) / 10.0;
    // Measured: storage cold (0) and warm (1); between them the model.
    by_cache.push_back({x, value_of(out.by_cache_fraction[i].outcome),
                        i == 0 || i + 1 == out.by_cache_fraction.size()});
  }
  cv::Mat img(panel_h, 2 * panel_w, CV_8UC3, cv::Scalar(255, 255, 255));
  const double y_floor = stall ? 10.0 : 1.0;
  panel(img, {0, 0}, "by preprocessors (filled: measured)", "preprocessors", y_name, by_workers,
        y_floor);
  panel(img, {panel_w, 0}, "by cached fraction (later epochs)", "fraction of the dataset cached",
        y_name, by_cache, y_floor);
  try {
    if (cv::imwrite(file.string(), img)) {
      return {};
    }
  } catch (const cv::Exception& e) {
    return error{errc::io_error, "--plot " + file.string() + ": " + e.what()};
  }
  return error{errc::io_error, "--plot " + file.string() + ": cannot write the PNG"};
}

}  // namespace conveyor
