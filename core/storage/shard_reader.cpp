#include "core/storage/shard_reader.hpp"

namespace conveyor {

namespace sf = shard_format;

namespace {

struct shard_ends {
  std::uint32_t version = 0;
  sf::trailer trailer;
};

// The file header's version and the trailer.
expected<shard_ends> read_ends(const byte_source& source) {
  const auto& name = source.name();
  if (source.size() < sf::file_header_size + sf::trailer_size) {
    return error{errc::corrupt_shard, name + ": " + std::to_string(source.size()) +
                                          " bytes is too short for a shard (truncated?)"};
  }
  sf::file_header_bytes header{};
  if (auto ok = source.read_at(0, header.data(), header.size()); !ok) {
    return std::move(ok).error();
  }
  auto version = sf::decode_file_header(header.data(), name);
  if (!version) {
    return std::move(version).error();
  }
  sf::trailer_bytes trailer{};
  if (auto ok = source.read_at(source.size() - sf::trailer_size, trailer.data(), trailer.size());
      !ok) {
    return std::move(ok).error();
  }
  auto t = sf::decode_trailer(trailer.data(), name);
  if (!t) {
    return std::move(t).error();
  }
  return shard_ends{*version, *t};
}

expected<void> check_index_bounds(const sf::trailer& t, std::uint64_t file_size,
                                  const std::string& name) {
  auto max_records = (file_size - sf::file_header_size - sf::trailer_size) / sf::index_entry_size;
  bool fits =
      t.record_count <= max_records && t.index_offset >= sf::file_header_size &&
      t.index_offset + t.record_count * sf::index_entry_size + sf::trailer_size == file_size;
  if (!fits) {
    return error{errc::corrupt_shard, name + ": index of " + std::to_string(t.record_count) +
                                          " records at offset " + std::to_string(t.index_offset) +
                                          " does not fit the file size " +
                                          std::to_string(file_size)};
  }
  return {};
}

// Records are contiguous from the header to the index; anything else is a corrupt index.
expected<std::vector<sf::index_entry>> decode_index(const std::vector<std::uint8_t>& bytes,
                                                    const sf::trailer& t, const std::string& name) {
  std::vector<sf::index_entry> index(t.record_count);
  std::uint64_t expected_offset = sf::file_header_size;
  for (std::uint64_t i = 0; i < t.record_count; ++i) {
    index[i] = sf::decode_index_entry(bytes.data() + i * sf::index_entry_size);
    if (index[i].offset != expected_offset || index[i].size < sf::record_header_size ||
        index[i].size > t.index_offset - index[i].offset) {
      return error{errc::corrupt_shard, record_location(name, i) + ": index entry out of place"};
    }
    expected_offset += index[i].size;
  }
  if (expected_offset != t.index_offset) {
    return error{errc::corrupt_shard, name + ": records do not end where the index starts"};
  }
  return index;
}

}  // namespace

std::string record_location(const std::string& shard, std::uint64_t i) {
  return shard + " record " + std::to_string(i);
}

shard_reader::shard_reader(std::shared_ptr<const byte_source> source, std::uint32_t version,
                           sf::trailer t, std::vector<sf::index_entry> index)
    : source_(std::move(source)), version_(version), trailer_(t), index_(std::move(index)) {}

expected<shard_reader> shard_reader::open(const std::filesystem::path& path) {
  auto source = open_file_source(path);
  if (!source) {
    return std::move(source).error();
  }
  return open(std::move(*source));
}

expected<shard_reader> shard_reader::open(std::shared_ptr<const byte_source> source) {
  const auto& name = source->name();
  auto ends = read_ends(*source);
  if (!ends) {
    return std::move(ends).error();
  }
  const auto& t = ends->trailer;
  if (auto ok = check_index_bounds(t, source->size(), name); !ok) {
    return std::move(ok).error();
  }
  std::vector<std::uint8_t> bytes(t.record_count * sf::index_entry_size);
  if (auto ok = source->read_at(t.index_offset, bytes.data(), bytes.size()); !ok) {
    return std::move(ok).error();
  }
  if (sf::checksum(bytes.data(), bytes.size()) != t.index_checksum) {
    return error{errc::corrupt_shard, name + ": index checksum mismatch"};
  }
  auto index = decode_index(bytes, t, name);
  if (!index) {
    return std::move(index).error();
  }
  return shard_reader(std::move(source), ends->version, t, std::move(*index));
}

error shard_reader::out_of_range(std::uint64_t i) const {
  return error{errc::not_found, record_location(name(), i) + ": out of range (shard has " +
                                    std::to_string(index_.size()) + " records)"};
}

expected<record> shard_reader::read(std::uint64_t i) const {
  if (i >= index_.size()) {
    return out_of_range(i);
  }
  std::vector<std::uint8_t> bytes(index_[i].size);
  if (auto ok = source_->read_at(index_[i].offset, bytes.data(), bytes.size()); !ok) {
    return error{ok.error().code(), record_location(name(), i) + ": " + ok.error().message()};
  }
  return parse_record(i, bytes.data());
}

expected<void> shard_reader::check(std::uint64_t i, const record& got) const {
  if (i >= index_.size()) {
    return out_of_range(i);
  }
  auto where = record_location(name(), i);
  auto differs = [&](const std::string& what) {
    return error{errc::checksum_mismatch, where + ": " + what};
  };
  const auto& at = index_[i];
  const auto body = at.size - sf::record_header_size;
  if (got.key.size() > body || got.payload.size() != body - got.key.size()) {
    return differs("key and payload sizes (" + std::to_string(got.key.size()) + " + " +
                   std::to_string(got.payload.size()) + ") differ from the index (" +
                   std::to_string(body) + ")");
  }
  std::vector<std::uint8_t> head(sf::record_header_size + got.key.size());
  if (auto ok = source_->read_at(at.offset, head.data(), head.size()); !ok) {
    return error{ok.error().code(), where + ": " + ok.error().message()};
  }
  auto header = sf::decode_record_header(head.data(), version_, where);
  if (!header) {
    return std::move(header).error();
  }
  const auto* key = head.data() + sf::record_header_size;
  const std::string stored_key(reinterpret_cast<const char*>(key), header->key_size);
  if (header->key_size != got.key.size() || stored_key != got.key) {
    return differs("key \"" + got.key + "\" is not this record's");
  }
  if (header->label != got.label) {
    return differs("label " + std::to_string(got.label) + " is not this record's (" +
                   std::to_string(header->label) + ")");
  }
  if (got.multipart != ((header->flags & sf::record_multipart) != 0)) {
    return differs(got.multipart ? "a multipart record, but this record is one part"
                                 : "one part, but this record is multipart");
  }
  if (sf::record_checksum(head.data(), key, header->key_size, got.payload.data(),
                          got.payload.size()) != header->checksum) {
    return differs("payload does not match the record's checksum");
  }
  return {};
}

expected<record> shard_reader::parse_record(std::uint64_t i, const std::uint8_t* bytes) const {
  auto where = record_location(name(), i);
  auto header = sf::decode_record_header(bytes, version_, where);
  if (!header) {
    return std::move(header).error();
  }
  // Compared without adding the stored sizes, which a corrupt header could make overflow.
  auto body = index_[i].size - sf::record_header_size;
  if (header->key_size > body || header->payload_size != body - header->key_size) {
    return error{errc::corrupt_shard, where + ": key and payload sizes (" +
                                          std::to_string(header->key_size) + " + " +
                                          std::to_string(header->payload_size) +
                                          ") differ from the index (" + std::to_string(body) + ")"};
  }
  const auto* key = bytes + sf::record_header_size;
  const auto* payload = key + header->key_size;
  if (sf::record_checksum(bytes, key, header->key_size, payload, header->payload_size) !=
      header->checksum) {
    return error{errc::checksum_mismatch,
                 where + ": checksum mismatch (the record's bytes changed)"};
  }
  record r;
  r.key.assign(reinterpret_cast<const char*>(key), header->key_size);
  r.label = header->label;
  r.payload.assign(payload, payload + header->payload_size);
  r.multipart = (header->flags & sf::record_multipart) != 0;
  return r;
}

}  // namespace conveyor
