#pragma once
/// The reader: turns a sample ticket into the sample's encoded bytes (from the cache, a peer's
/// cache, or storage: shards or an image folder) and passes them to the preprocessor the batcher
/// chose. A read error travels the same way, so the preprocessor's accounting stays exact. Runs on
/// its own thread (detached): a slow disk blocks it, never the scheduler.

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>

#include "actors/peer_fetcher.hpp"
#include "actors/reporting.hpp"
#include "actors/worker_context.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/sample_source.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct reader_options {
  worker_context context;
  std::shared_ptr<const sample_source> source;
  std::shared_ptr<pipeline_status> status;  ///< sums read time, counts cache hits and reads
  reporting report;
  /// Read through: a cached sample comes from memory; one read from storage fills the cache
  /// when it is one of the cache's samples. Null: every read goes to storage.
  std::shared_ptr<minio_cache> cache{};
  /// The partitioned cache: a sample another node's cache holds is fetched from that node
  /// before storage. Null: no peers.
  std::shared_ptr<const peer_fetcher> peers{};
  /// The longest a reader waits for another thread's read of the same cached sample (then it
  /// reads the sample itself).
  std::chrono::milliseconds fill_wait{10000};
};

reader_actor spawn_reader(caf::actor_system& sys, reader_options options);

}  // namespace conveyor
