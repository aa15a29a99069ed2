#include "core/storage/shard_writer.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>

namespace conveyor {

namespace sf = shard_format;

expected<shard_writer> shard_writer::create(const std::filesystem::path& path) {
  auto partial = path;
  partial += ".partial";
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(partial.c_str(), "wb"));
  if (!file) {
    return error{errc::io_error, partial.string() + ": cannot create: " + std::strerror(errno)};
  }
  shard_writer writer(path, std::move(file));
  auto header = sf::encode_file_header(sf::first_version);  // finish() may raise it
  if (auto ok = writer.write(header.data(), header.size()); !ok) {
    return std::move(ok).error();
  }
  return writer;
}

shard_writer::shard_writer(std::filesystem::path path, std::unique_ptr<std::FILE, file_closer> file)
    : path_(std::move(path)), file_(std::move(file)) {
  partial_path_ = path_;
  partial_path_ += ".partial";
}

expected<void> shard_writer::write(const std::uint8_t* data, std::size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, file_.get()) != size) {
    return error{errc::io_error, partial_path_.string() + ": write failed at offset " +
                                     std::to_string(offset_) + ": " + std::strerror(errno)};
  }
  offset_ += size;
  return {};
}

expected<void> shard_writer::append(std::string_view key, std::int32_t label,
                                    const std::uint8_t* payload, std::uint64_t payload_size) {
  return append_record(key, label, 0, payload, payload_size);
}

expected<void> shard_writer::append(const record& r) {
  return append_record(r.key, r.label, r.multipart ? sf::record_multipart : 0, r.payload.data(),
                       r.payload.size());
}

expected<void> shard_writer::append_record(std::string_view key, std::int32_t label,
                                           std::uint32_t flags, const std::uint8_t* payload,
                                           std::uint64_t payload_size) {
  if (!file_) {
    return error{errc::invalid_argument, path_.string() + ": append after finish"};
  }
  if (key.size() > sf::max_key_size) {
    return error{errc::invalid_argument,
                 path_.string() + ": key '" + std::string(key.substr(0, 64)) +
                     "...' is longer than " + std::to_string(sf::max_key_size) + " bytes"};
  }
  const auto* key_bytes = reinterpret_cast<const std::uint8_t*>(key.data());
  auto key_size = static_cast<std::uint32_t>(key.size());
  auto header = sf::encode_record_header(key_size, label, flags, key_bytes, payload, payload_size);
  sf::index_entry entry{offset_, header.size() + key_size + payload_size};
  using piece = std::pair<const std::uint8_t*, std::size_t>;
  for (auto [data, size] : {piece{header.data(), header.size()}, piece{key_bytes, key_size},
                            piece{payload, static_cast<std::size_t>(payload_size)}}) {
    if (auto ok = write(data, size); !ok) {
      return ok;
    }
  }
  index_.push_back(entry);
  if (flags != 0) {
    version_ = sf::multipart_version;
  }
  return {};
}

// The file header says version 1 until a multipart record makes the shard version 2.
expected<void> shard_writer::write_version() {
  if (version_ == sf::first_version) {
    return {};
  }
  auto header = sf::encode_file_header(version_);
  if (std::fseek(file_.get(), 0, SEEK_SET) != 0 ||
      std::fwrite(header.data(), 1, header.size(), file_.get()) != header.size()) {
    return error{errc::io_error, partial_path_.string() +
                                     ": cannot rewrite the file header: " + std::strerror(errno)};
  }
  return {};
}

expected<shard_summary> shard_writer::finish() {
  if (!file_) {
    return error{errc::invalid_argument, path_.string() + ": finish called twice"};
  }
  std::vector<std::uint8_t> index(index_.size() * sf::index_entry_size);
  for (std::size_t i = 0; i < index_.size(); ++i) {
    sf::encode_index_entry(index_[i], index.data() + i * sf::index_entry_size);
  }
  sf::trailer t{offset_, index_.size(), sf::checksum(index.data(), index.size())};
  auto trailer = sf::encode_trailer(t);
  if (auto ok = write(index.data(), index.size()); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = write(trailer.data(), trailer.size()); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = write_version(); !ok) {
    return std::move(ok).error();
  }
  if (std::fflush(file_.get()) != 0 || std::fclose(file_.release()) != 0) {
    return error{errc::io_error,
                 partial_path_.string() + ": flush failed: " + std::strerror(errno)};
  }
  std::error_code ec;
  std::filesystem::rename(partial_path_, path_, ec);
  if (ec) {
    return error{errc::io_error, path_.string() + ": cannot rename from .partial: " + ec.message()};
  }
  return shard_summary{path_, index_.size(), offset_, t.index_checksum, version_};
}

}  // namespace conveyor
