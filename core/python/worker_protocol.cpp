#include "core/python/worker_protocol.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/base/little_endian.hpp"
#include "core/python/child_process.hpp"

namespace conveyor {

namespace {

constexpr std::array<std::size_t, 13> element_sizes = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
constexpr std::array<const char*, 13> dtype_names = {
    "bool",  "uint8",  "int8",    "int16",    "uint16",  "int32",  "uint32",
    "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
constexpr std::uint8_t last_kind = static_cast<std::uint8_t>(leaf_kind::pickled);

error refused(const std::string& why) {
  return error{errc::invalid_argument, "a worker's reply: " + why};
}

// Reads the fields of one message in order. The first read past its end (or a text over its
// limit) is kept as the reply's error; every read after it gives zeros and empty texts, so that
// a caller checks failed() once after a group of reads.
class message_reader {
 public:
  explicit message_reader(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}

  template <class T>
  T number(const char* what) {
    if (!have(sizeof(T), what)) {
      return T{};
    }
    auto v = little_endian::load<T>(bytes_.data() + at_);
    at_ += sizeof(T);
    return v;
  }

  std::string text(std::size_t size, const char* what) {
    if (!have(size, what)) {
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return s;
  }

  // A u32-prefixed text of at most max_worker_text bytes.
  std::string sized_text(const char* what) {
    const auto size = number<std::uint32_t>(what);
    if (size > max_worker_text && !failure_) {
      failure_ = refused(std::string("its ") + what + " is longer than " +
                         std::to_string(max_worker_text) + " bytes");
    }
    return failure_ ? std::string{} : text(size, what);
  }

  void skip(std::size_t n) { (void)text(n, "padding"); }
  bool at_end() const { return at_ == bytes_.size(); }
  bool failed() const { return failure_.has_value(); }
  const error& failure() const { return *failure_; }

 private:
  bool have(std::size_t n, const char* what) {
    if (!failure_ && bytes_.size() - at_ < n) {
      failure_ = refused(std::string("cut short in its ") + what);
    }
    return !failure_;
  }

  const std::vector<std::uint8_t>& bytes_;
  std::size_t at_ = 0;
  std::optional<error> failure_;
};

template <class T>
void put(std::vector<std::uint8_t>& out, T value) {
  const auto at = out.size();
  out.resize(at + sizeof(T));
  little_endian::store(out.data() + at, value);
}

// Elements x element size, or nullopt on overflow.
std::optional<std::uint64_t> byte_count(const std::vector<std::uint64_t>& shape,
                                        std::size_t element) {
  std::uint64_t n = element;
  for (auto d : shape) {
    if (d != 0 && n > UINT64_MAX / d) {
      return std::nullopt;
    }
    n *= d;
  }
  return n;
}

// What each kind of leaf must be: Python's scalars have no dimensions and their own dtype,
// texts and pickles are one dimension of bytes.
expected<void> check_kind(const worker_field& f) {
  const auto scalar = [&](worker_dtype t) { return f.dtype == t && f.shape.empty(); };
  bool ok = true;
  switch (f.kind) {
    case leaf_kind::int_:
      ok = scalar(worker_dtype::int64);
      break;
    case leaf_kind::float_:
      ok = scalar(worker_dtype::float64);
      break;
    case leaf_kind::bool_:
      ok = scalar(worker_dtype::bool_);
      break;
    case leaf_kind::str:
    case leaf_kind::bytes:
    case leaf_kind::pickled:
      ok = f.dtype == worker_dtype::uint8 && f.shape.size() == 1;
      break;
    default:
      break;
  }
  if (!ok) {
    return refused("field " + f.name + " has a dtype or rank its kind cannot have");
  }
  return {};
}

expected<worker_field> read_field(message_reader& in, std::uint64_t region_bytes) {
  worker_field f;
  const auto kind = in.number<std::uint8_t>("field kind");
  const auto type = in.number<std::uint8_t>("field dtype");
  const auto ndim = in.number<std::uint8_t>("field rank");
  in.skip(1);
  const auto name_size = in.number<std::uint16_t>("field name's size");
  if (in.failed()) {
    return in.failure();
  }
  if (kind > last_kind || type >= element_sizes.size()) {
    return refused("a field of unknown kind " + std::to_string(kind) + " or dtype " +
                   std::to_string(type));
  }
  if (ndim > max_worker_ndim) {
    return refused("a field of " + std::to_string(ndim) + " dimensions");
  }
  f.kind = static_cast<leaf_kind>(kind);
  f.dtype = static_cast<worker_dtype>(type);
  f.name = in.text(name_size, "field name");
  for (std::uint8_t d = 0; d < ndim && !in.failed(); ++d) {
    f.shape.push_back(in.number<std::uint64_t>("field shape"));
  }
  f.offset = in.number<std::uint64_t>("field offset");
  f.bytes = in.number<std::uint64_t>("field size");
  if (in.failed()) {
    return in.failure();
  }
  auto expected_bytes = byte_count(f.shape, size_of(f.dtype));
  if (!expected_bytes || *expected_bytes != f.bytes) {
    return refused("field " + f.name + ": " + std::to_string(f.bytes) +
                   " bytes do not match its shape");
  }
  if (f.offset > region_bytes || f.bytes > region_bytes - f.offset) {
    return refused("field " + f.name + " lies outside the sample's region of " +
                   std::to_string(region_bytes) + " bytes");
  }
  if (auto ok = check_kind(f); !ok) {
    return ok.error();
  }
  return f;
}

// The worker's own memfd behind a done reply: a regular file of at least `bytes`, read by copy
// only (worker_sample::copy).
expected<std::shared_ptr<const unique_fd>> answer_file(std::vector<unique_fd>& fds,
                                                       std::uint64_t bytes) {
  if (bytes == 0) {
    if (!fds.empty()) {
      return refused("a descriptor came with a sample of no bytes");
    }
    return std::shared_ptr<const unique_fd>{};
  }
  struct stat st {};
  if (fds.size() != 1 || ::fstat(fds[0].get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) < bytes) {
    return refused("the answer's region is not one file of at least " + std::to_string(bytes) +
                   " bytes");
  }
  return std::make_shared<const unique_fd>(std::move(fds[0]));
}

expected<worker_reply> decode_done(message_reader& in, std::vector<unique_fd>& fds) {
  worker_reply r;
  r.kind = reply_kind::done;
  r.sample.index = in.number<std::uint64_t>("index");
  const auto region_bytes = in.number<std::uint64_t>("region size");
  const auto count = in.number<std::uint32_t>("field count");
  const auto structure_size = in.number<std::uint32_t>("structure's size");
  r.sample.structure = in.text(structure_size, "structure");
  if (in.failed()) {
    return in.failure();
  }
  if (count > max_worker_fields) {
    return refused(std::to_string(count) + " fields (at most " + std::to_string(max_worker_fields) +
                   ")");
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    auto f = read_field(in, region_bytes);
    if (!f) {
      return f.error();
    }
    r.sample.fields.push_back(std::move(*f));
  }
  if (!in.at_end()) {
    return refused("bytes after its field table");
  }
  auto file = answer_file(fds, region_bytes);
  if (!file) {
    return file.error();
  }
  r.sample.file = std::move(*file);
  return r;
}

expected<worker_reply> decode_exception(message_reader& in, reply_kind kind) {
  worker_reply r;
  r.kind = kind;
  r.exception.index = in.number<std::uint64_t>("index");
  r.exception.type = in.sized_text("exception type");
  r.exception.message = in.sized_text("exception message");
  r.exception.frame = in.sized_text("exception frame");
  if (in.failed()) {
    return in.failure();
  }
  if (!in.at_end()) {
    return refused("bytes after its exception");
  }
  return r;
}

bool is_pipe_read_end(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
         (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY;
}

expected<worker_reply> decode_forked(message_reader& in, std::vector<unique_fd>& fds) {
  worker_reply r;
  r.kind = reply_kind::forked;
  const auto pid = in.number<std::uint32_t>("pid");
  if (in.failed()) {
    return in.failure();
  }
  if (!in.at_end()) {
    return refused("bytes after its pid");
  }
  if (pid == 0 || pid > static_cast<std::uint32_t>(INT32_MAX)) {
    return refused("a forked reply naming pid " + std::to_string(pid));
  }
  if (fds.size() != 2 || pid_of_pidfd(fds[0].get()) != static_cast<pid_t>(pid) ||
      !is_pipe_read_end(fds[1].get())) {
    return refused("a forked reply without a pidfd of pid " + std::to_string(pid) +
                   " and a pipe's read end");
  }
  r.forked.pid = static_cast<pid_t>(pid);
  r.forked.process = std::move(fds[0]);
  r.forked.status = std::move(fds[1]);
  return r;
}

}  // namespace

std::size_t size_of(worker_dtype type) noexcept {
  const auto i = static_cast<std::size_t>(type);
  return i < element_sizes.size() ? element_sizes[i] : 0;
}

const char* name_of(worker_dtype type) noexcept {
  const auto i = static_cast<std::size_t>(type);
  return i < dtype_names.size() ? dtype_names[i] : "unknown";
}

expected<void> worker_sample::copy(const worker_field& f, std::uint8_t* out) const {
  const int fd = file->get();
  std::uint64_t done = 0;
  while (done < f.bytes) {
    const auto n = ::pread(fd, out + done, f.bytes - done, static_cast<off_t>(f.offset + done));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) {
        continue;
      }
      return error{errc::io_error, "reading the sample's region: " +
                                       std::string(n == 0 ? "cut short" : std::strerror(errno))};
    }
    done += static_cast<std::uint64_t>(n);
  }
  return {};
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

std::string worker_exception::what() const {
  return type + ": " + message + (frame.empty() ? "" : " (at " + frame + ")");
}

std::vector<std::uint8_t> start_message(std::uint64_t setup_bytes) {
  std::vector<std::uint8_t> m = {1, 0, 0, 0, 'C', 'V', 'P', 'W'};
  put(m, worker_protocol_version);
  put(m, setup_bytes);
  return m;
}

std::vector<std::uint8_t> fork_message(std::uint32_t worker_id) {
  std::vector<std::uint8_t> m = {4, 0, 0, 0};
  put(m, worker_id);
  return m;
}

std::vector<std::uint8_t> sample_message(std::uint64_t epoch, std::uint64_t index,
                                         std::uint64_t seed) {
  std::vector<std::uint8_t> m(8, 0);
  m[0] = 2;
  put(m, epoch);
  put(m, index);
  put(m, seed);
  return m;
}

std::vector<std::uint8_t> stop_message() {
  return {3};
}

std::vector<std::uint8_t> apply_message(std::uint32_t step, std::uint64_t epoch,
                                        std::uint64_t index, std::uint64_t seed,
                                        const std::vector<worker_field>& fields) {
  std::vector<std::uint8_t> m = {5, 0, 0, 0};
  put(m, step);
  put(m, epoch);
  put(m, index);
  put(m, seed);
  put(m, static_cast<std::uint32_t>(fields.size()));
  for (const auto& f : fields) {
    m.push_back(static_cast<std::uint8_t>(f.kind));
    m.push_back(static_cast<std::uint8_t>(f.dtype));
    m.push_back(static_cast<std::uint8_t>(f.shape.size()));
    m.push_back(0);
    put(m, static_cast<std::uint16_t>(f.name.size()));
    m.insert(m.end(), f.name.begin(), f.name.end());
    for (auto d : f.shape) {
      put(m, d);
    }
    put(m, f.offset);
    put(m, f.bytes);
  }
  return m;
}

expected<worker_reply> decode_reply(received_message m) {
  if (m.bytes.size() > max_worker_message) {
    return refused("longer than " + std::to_string(max_worker_message) + " bytes");
  }
  message_reader in(m.bytes);
  const auto kind = in.number<std::uint8_t>("kind");
  if (in.failed()) {
    return in.failure();
  }
  const auto k = static_cast<reply_kind>(kind);
  if (k == reply_kind::ready) {
    if (!m.fds.empty() || !in.at_end()) {
      return refused("a ready message with more in it");
    }
    return worker_reply{};
  }
  in.skip(3);
  switch (k) {
    case reply_kind::done:
      return decode_done(in, m.fds);
    case reply_kind::forked:
      return decode_forked(in, m.fds);
    case reply_kind::failed:
    case reply_kind::raised:
      if (!m.fds.empty()) {
        return refused("a descriptor came with an exception");
      }
      return decode_exception(in, k);
    default:
      return refused("of unknown kind " + std::to_string(kind));
  }
}

}  // namespace conveyor
