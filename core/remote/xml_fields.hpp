#pragma once
/// The few fields Conveyor reads from S3's XML answers (an error's Code and Message, a listing's
/// Keys and Sizes, an upload's UploadId): the texts of elements by tag name, entities decoded.
/// Not a general XML parser: an answer that is not what S3 sends gives no fields, never a
/// crash or an unbounded scan. Pure: thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conveyor {

/// The texts of every <tag>...</tag> in `xml`, in order (elements with attributes included).
std::vector<std::string> xml_texts(std::string_view xml, std::string_view tag);
/// The text of the first <tag>, or nullopt.
std::optional<std::string> xml_text(std::string_view xml, std::string_view tag);
/// The parts of `xml` enclosed by each <tag>...</tag> (e.g. each <Contents> of a listing).
std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag);

}  // namespace conveyor
