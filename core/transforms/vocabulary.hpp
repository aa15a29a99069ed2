#pragma once
/// A token vocabulary for transcripts: one token per line of a UTF-8 file, its id the line's
/// number from 0 (a space token is a line holding one space). Text becomes ids by longest
/// match: at each position the longest token that the text continues with. Immutable once
/// loaded: encode() may run on any number of threads at once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

class vocabulary {
 public:
  /// The vocabulary of file `path`. errc::invalid_config naming the path and line: a file
  /// that does not read, is not a regular file (a FIFO, /dev/zero: refused from its type,
  /// without blocking or reading), is over 64 MiB (refused from its size; at most 64 MiB + 1
  /// bytes are ever read) or holds no token; a line that is empty or not UTF-8; a token twice
  /// (both lines named). A final newline ends the last line; "\r\n" is a newline.
  static expected<vocabulary> load(const std::string& path);
  /// The vocabulary of `tokens`, ids in their order; the same checks, naming the index.
  static expected<vocabulary> of(const std::vector<std::string>& tokens);

  std::size_t size() const noexcept { return count_; }

  /// The ids of `text` by longest match, after stripping ASCII whitespace at both ends and,
  /// with `lowercase`, lowercasing ASCII letters. errc::invalid_argument naming the first
  /// character no token covers (the character, its code point and its byte offset).
  expected<std::vector<std::int32_t>> encode(std::string_view text, bool lowercase) const;

 private:
  /// The vocabulary of `tokens`; errors name token i as `unit` (i + first) after `context`.
  static expected<vocabulary> build(const std::vector<std::string>& tokens,
                                    const std::string& context, std::string_view unit,
                                    std::size_t first);

  std::unordered_map<std::string, std::int32_t> ids_;
  std::size_t longest_ = 0;  ///< bytes of the longest token
  std::size_t count_ = 0;
};

}  // namespace conveyor
