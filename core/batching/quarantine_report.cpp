#include "core/batching/quarantine_report.hpp"

#include <cerrno>
#include <cstring>

namespace conveyor {
namespace {

// Tabs and line breaks inside a field would break the line format.
std::string field(std::string text) {
  for (auto& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return text;
}

}  // namespace

expected<std::shared_ptr<quarantine_report>> quarantine_report::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return error{errc::io_error,
                 "cannot create the quarantine report '" + path + "': " + std::strerror(errno)};
  }
  std::fputs("epoch\tsample\tkey\treason\n", f);
  std::fflush(f);
  return std::shared_ptr<quarantine_report>(new quarantine_report(path, f));
}

void quarantine_report::append(const quarantine_entry& e) {
  std::fprintf(file_.get(), "%llu\t%llu\t%s\t%s\n", static_cast<unsigned long long>(e.epoch),
               static_cast<unsigned long long>(e.sample_id), field(e.key).c_str(),
               field(e.reason).c_str());
  std::fflush(file_.get());
}

}  // namespace conveyor
