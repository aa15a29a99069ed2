#pragma once
/// Parsing a command line with CLI11 the same way in every app: --help prints and exits 0, a
/// bad command line prints why and exits 2.

#include <CLI/CLI.hpp>

#include <optional>

namespace conveyor {

/// std::nullopt when the app should go on; otherwise the exit code to return now.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return std::nullopt;
}

}  // namespace conveyor
