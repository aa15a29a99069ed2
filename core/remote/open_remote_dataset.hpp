#pragma once
/// Opens a dataset in an object store from its address, "s3://bucket/prefix":
///
/// - record shards (dataset.format = "shards"): the prefix's manifest.txt, read first; then each
///   shard's trailer and index (two range GETs a shard), checked against the manifest. A writer
///   (conveyor-pack --out s3://) uploads the manifest last, so a set being written is not seen.
/// - WebDataset tars ("webdataset"): the .tar objects directly under the prefix (a listing), in
///   key order, or the one object the address names when it ends in ".tar"; each tar's member
///   headers are walked as a local tar's are, in blocks of s3.read_size with several in flight.
///
/// Other formats read local files: an error. Every error names the URL, and for the server's
/// answers its HTTP status and error code (NoSuchBucket, InvalidAccessKeyId, ...), never the
/// credentials.

#include <cstdint>
#include <memory>
#include <string>

#include "conveyor/error.hpp"
#include "core/remote/remote_dataset.hpp"
#include "core/remote/s3_settings.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// `held`: the bytes the readers want fetched ahead besides two requests per connection (the
/// cache's memory tier; with dataset.shuffle = "blocks", two spans: the one read and the next),
/// which set how much may be fetched ahead when s3.prefetch_bytes is not set.
expected<std::shared_ptr<const remote_dataset>> open_remote_dataset(
    const std::string& url, dataset_format format, const s3_settings& settings, std::uint64_t held,
    const environment& env = process_environment());

/// The bytes a dataset in a store may have fetched ahead of its readers: s3.prefetch_bytes, or
/// `held` plus two requests per connection.
std::uint64_t prefetch_budget(const s3_settings& settings, std::uint64_t held);

}  // namespace conveyor
