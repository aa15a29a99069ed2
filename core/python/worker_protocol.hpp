#pragma once
/// The messages between an actor and the Python worker process it owns, and between a pool
/// and the zygote its workers are forked from (python/conveyor_worker.py is the other half of
/// both), over SOCK_SEQPACKET sockets (core/serving/fd_passing.hpp). Little-endian, fixed
/// layouts:
///
///   start   (to the zygote)   kind 1, "CVPW", protocol, setup bytes; + a memfd holding the
///                             setup (the pickled dataset: worker_process.hpp)
///   fork    (to the zygote)   kind 4, worker id; + the new worker's end of its socket
///   forked  (from the zygote) kind 5, pid; + a pidfd of the worker and the read end of a pipe
///                             on which the zygote writes its wait status (4 bytes) once it
///                             has reaped it
///   sample  (to the worker)   kind 2, epoch, index, seed
///   apply   (to the worker)   kind 5, step, epoch, index, seed, field count, the field table
///                             (as done's); + a memfd of the fields' bytes when there are any:
///                             a topology's Python step `step` (python_transform.hpp) on them
///   stop    (to either)       kind 3
///   ready   (from either)     kind 1
///   failed  (from either)     kind 2, 0, type, message, last frame (the exception the
///                             zygote's start or the worker's worker_init_fn raised)
///   done    (from the worker) kind 3, index, region bytes, field count, structure bytes, the
///                             structure (JSON), the field table; + the worker's own memfd
///                             holding the fields' bytes, when there are any (worker_sample)
///   raised  (from the worker) kind 4, index, type, message, last frame (dataset[index]'s)
///
/// The worker runs the user's code and may be hostile or broken: decode_reply checks every
/// length, count, shape, offset and descriptor before anything is sized or read by it, and
/// names what it refused. Pure functions (no process, no socket): fuzzed (fuzz/fuzz_worker_reply).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/serving/fd_passing.hpp"

namespace conveyor {

inline constexpr std::uint32_t worker_protocol_version = 3;
/// The largest message a worker may send (its structure and field table); more is refused.
inline constexpr std::size_t max_worker_message = std::size_t{1} << 20;
inline constexpr std::size_t max_worker_fields = 4096;
inline constexpr std::size_t max_worker_ndim = 32;
inline constexpr std::size_t max_worker_text = 4096;

/// Element types a Python sample's arrays may have (NumPy's and torch's names). Values are
/// the wire's.
enum class worker_dtype : std::uint8_t {
  bool_ = 0,
  uint8,
  int8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
};
/// Bytes per element; 0 for a value that is no worker_dtype.
std::size_t size_of(worker_dtype type) noexcept;
/// "bool", "uint8", ... as NumPy and torch spell them.
const char* name_of(worker_dtype type) noexcept;

/// What a leaf of the sample was in Python, so that the consumer rebuilds it (a tensor stays a
/// tensor, an int becomes int64, a str a str).
enum class leaf_kind : std::uint8_t {
  tensor = 0,  ///< a torch.Tensor
  ndarray,     ///< a numpy.ndarray or NumPy scalar
  int_,        ///< a Python int (int64, no dimensions)
  float_,      ///< a Python float (float64, no dimensions)
  bool_,       ///< a Python bool (bool, no dimensions)
  str,         ///< UTF-8 bytes (uint8, one dimension)
  bytes,       ///< bytes (uint8, one dimension)
  pickled,     ///< any other object, pickled (uint8, one dimension)
};

struct worker_field {
  leaf_kind kind = leaf_kind::tensor;
  worker_dtype dtype = worker_dtype::uint8;
  std::string name;  ///< its path in the sample: "sample.0", "sample.image"
  std::vector<std::uint64_t> shape;
  std::uint64_t offset = 0;  ///< in the region
  std::uint64_t bytes = 0;   ///< elements x size_of(dtype)
};

/// A sample a worker made (a Python Dataset's, or a Python step's answer): its structure and
/// fields, their bytes in `file`, the worker's own memfd (null when there are no bytes), which
/// it writes again for its next reply: no memfd is made, zeroed, sealed or mapped per sample.
/// So the bytes are copied out (copy) before the worker is asked again, and never mapped: a
/// worker that writes or shrinks its memfd meanwhile spoils only its own answer (a read cut
/// short is an error). Immutable once decoded.
struct worker_sample {
  std::uint64_t index = 0;
  std::string structure;  ///< JSON, as the worker wrote it (the consumer parses it)
  std::vector<worker_field> fields;
  std::shared_ptr<const unique_fd> file;

  /// Copies `f`'s bytes to `out` (f.bytes of room) by the kernel (pread). errc::io_error naming
  /// the failure. Precondition: f is one of fields.
  expected<void> copy(const worker_field& f, std::uint8_t* out) const;
};

/// "[2, 3]": how messages name a shape a worker sent.
std::string shape_text(const std::vector<std::uint64_t>& shape);

/// An exception the user's code raised in a worker.
struct worker_exception {
  std::uint64_t index = 0;  ///< the sample's (0 for a start's)
  std::string type;         ///< e.g. "ValueError"
  std::string message;
  std::string frame;  ///< "file:line in function" of the traceback's last frame
  /// "ValueError: message (at file:line in function)".
  std::string what() const;
};

/// A worker the zygote forked, as its reply says.
struct forked_process {
  pid_t pid = -1;
  unique_fd process;  ///< a pidfd of pid (checked to be one)
  unique_fd status;   ///< the read end of a pipe (checked): the wait status, once reaped
};

enum class reply_kind : std::uint8_t { ready = 1, failed = 2, done = 3, raised = 4, forked = 5 };

struct worker_reply {
  reply_kind kind = reply_kind::ready;
  worker_sample sample;        ///< for done
  worker_exception exception;  ///< for failed and raised
  forked_process forked;       ///< for forked
};

std::vector<std::uint8_t> start_message(std::uint64_t setup_bytes);
std::vector<std::uint8_t> fork_message(std::uint32_t worker_id);
std::vector<std::uint8_t> sample_message(std::uint64_t epoch, std::uint64_t index,
                                         std::uint64_t seed);
std::vector<std::uint8_t> stop_message();
/// Python step `step` on the sample `index` of `epoch`, seeded with `seed`, on `fields` (their
/// bytes at their offsets in a memfd sent with it).
std::vector<std::uint8_t> apply_message(std::uint32_t step, std::uint64_t epoch,
                                        std::uint64_t index, std::uint64_t seed,
                                        const std::vector<worker_field>& fields);

/// The reply in `m` (its descriptors taken). errc::invalid_argument naming what is wrong: an
/// unknown kind, a message cut short or too long, a count, shape or name past the limits
/// above, a field whose bytes do not match its shape or lie outside the region, a region that
/// is missing or not one regular file (a memfd) of at least the size said; a forked reply
/// without exactly a pidfd of the pid it names and a pipe's read end.
expected<worker_reply> decode_reply(received_message m);

}  // namespace conveyor
