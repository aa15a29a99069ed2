#pragma once
/// The quarantine report file (`supervision.quarantine_report`): one tab-separated line per
/// quarantined sample (epoch, sample index, file or shard and record, reason), written and
/// flushed as each sample is set aside, so the report is complete even if the node dies.

#include <cstdio>
#include <memory>
#include <string>

#include "conveyor/error.hpp"
#include "core/batching/epoch_ledger.hpp"

namespace conveyor {

class quarantine_report {
 public:
  /// Creates (truncates) `path` and writes the header line.
  static expected<std::shared_ptr<quarantine_report>> open(const std::string& path);

  /// Appends one line and flushes it. Not thread-safe (the batcher owns it).
  void append(const quarantine_entry& entry);
  const std::string& path() const noexcept { return path_; }

 private:
  struct closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  quarantine_report(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}

  std::string path_;
  std::unique_ptr<std::FILE, closer> file_;
};

}  // namespace conveyor
