#include "core/codecs/audio_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include <sndfile.h>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

/// The bytes libsndfile reads through its virtual I/O.
struct memory_file {
  const std::uint8_t* data = nullptr;
  sf_count_t size = 0;
  sf_count_t position = 0;
};

sf_count_t vio_length(void* user) {
  return static_cast<memory_file*>(user)->size;
}

sf_count_t vio_seek(sf_count_t offset, int whence, void* user) {
  auto* file = static_cast<memory_file*>(user);
  const sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? file->position : file->size;
  if (offset < -base || offset > file->size - base) {
    return -1;  // before the start or past the end: no format needs either
  }
  file->position = base + offset;
  return file->position;
}

sf_count_t vio_read(void* out, sf_count_t count, void* user) {
  auto* file = static_cast<memory_file*>(user);
  const sf_count_t n = std::max<sf_count_t>(0, std::min(count, file->size - file->position));
  if (n > 0) {
    std::memcpy(out, file->data + file->position, static_cast<std::size_t>(n));
  }
  file->position += n;
  return n;
}

sf_count_t vio_write(const void* /*in*/, sf_count_t /*count*/, void* /*user*/) {
  return 0;
}

sf_count_t vio_tell(void* user) {
  return static_cast<memory_file*>(user)->position;
}

error audio_error(const std::string& why) {
  return error(errc::decode_error, "audio: " + why);
}

/// An open libsndfile handle.
class sound_file {
 public:
  sound_file(SNDFILE* handle, const SF_INFO& info) : handle_(handle), info_(info) {}
  ~sound_file() {
    if (handle_ != nullptr) {
      sf_close(handle_);
    }
  }
  sound_file(sound_file&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), info_(other.info_) {}
  sound_file(const sound_file&) = delete;
  sound_file& operator=(const sound_file&) = delete;
  sound_file& operator=(sound_file&&) = delete;

  SNDFILE* get() const noexcept { return handle_; }
  const SF_INFO& info() const noexcept { return info_; }

  /// libsndfile's log of what it parsed and what went wrong (at most a few KB).
  std::string log() const {
    char text[4096] = {};
    sf_command(handle_, SFC_GET_LOG_INFO, text, sizeof text - 1);
    return text;
  }

 private:
  SNDFILE* handle_;
  SF_INFO info_;
};

/// Why a RIFF WAVE file's fmt chunk makes no sound (a sample rate or channel count of 0), or
/// "" when it is not a WAV or its fmt chunk says nothing wrong: what libsndfile's refusal to
/// open it ("SF_INFO struct incomplete") means.
std::string wav_format_problem(const std::uint8_t* data, std::size_t size) {
  if (size < 12 || std::memcmp(data, "RIFF", 4) != 0 || std::memcmp(data + 8, "WAVE", 4) != 0) {
    return "";
  }
  std::size_t at = 12;
  for (int chunk = 0; chunk < 64 && at + 8 <= size; ++chunk) {
    const std::uint32_t bytes = little_endian::load<std::uint32_t>(data + at + 4);
    if (std::memcmp(data + at, "fmt ", 4) == 0 && bytes >= 16 && at + 8 + 16 <= size) {
      const auto channels = little_endian::load<std::uint16_t>(data + at + 10);
      const auto rate = little_endian::load<std::uint32_t>(data + at + 12);
      if (rate == 0 || channels == 0) {
        return "its fmt chunk says " + std::to_string(rate) + " Hz, " + std::to_string(channels) +
               " channel(s)";
      }
      return "";
    }
    at += 8 + static_cast<std::size_t>(bytes) + (bytes & 1U);
  }
  return "";
}

expected<sound_file> open_sound(memory_file& file) {
  static SF_VIRTUAL_IO io{vio_length, vio_seek, vio_read, vio_write, vio_tell};
  static std::mutex open_mutex;
  std::lock_guard<std::mutex> lock(open_mutex);
  SF_INFO info{};
  SNDFILE* handle = sf_open_virtual(&io, SFM_READ, &info, &file);
  if (handle == nullptr) {
    const auto why = wav_format_problem(file.data, static_cast<std::size_t>(file.size));
    return audio_error(std::string("libsndfile cannot open it: ") + sf_strerror(nullptr) +
                       (why.empty() ? "" : " (" + why + ")"));
  }
  return sound_file(handle, info);
}

/// The first line of libsndfile's log that says the stream is damaged or shorter than its
/// header claims, or "" when there is none. The log is libsndfile's only report of these (its
/// calls succeed); the tests pin the lines it writes.
std::string damage_in_log(const std::string& log, bool strict) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const bool decoder_error = line.rfind("ERROR : ", 0) == 0;
    const bool short_data =
        line.rfind("data : ", 0) == 0 && line.find("(should be") != std::string::npos;
    if (decoder_error || (strict && short_data)) {
      return line;
    }
  }
  return "";
}

/// The header's rate, channels and frame count against the options.
expected<void> check_header(const SF_INFO& info, const audio_options& options) {
  if (info.samplerate <= 0) {
    return audio_error("sample rate " + std::to_string(info.samplerate));
  }
  if (info.channels < 1 || info.channels > options.max_channels) {
    return audio_error(std::to_string(info.channels) + " channels (at most " +
                       std::to_string(options.max_channels) + ")");
  }
  const bool known = info.frames != SF_COUNT_MAX;
  if (info.frames < 0 || (known && info.frames > options.max_samples / info.channels)) {
    return audio_error("header says " + std::to_string(info.frames) + " frames of " +
                       std::to_string(info.channels) + " channels, more than " +
                       std::to_string(options.max_samples) + " samples");
  }
  return {};
}

/// errc::filtered when `frames` at the file's rate last longer than options.max_seconds.
expected<void> check_duration(sf_count_t frames, int rate, const audio_options& options) {
  const double seconds = static_cast<double>(frames) / rate;
  if (options.max_seconds > 0.0 && seconds > options.max_seconds) {
    std::ostringstream text;
    text << "audio: " << seconds << " s, longer than the recipe's max_duration of "
         << options.max_seconds << " s";
    return error(errc::filtered, text.str());
  }
  return {};
}

/// A float file's first sample that is NaN or infinite, if any (integer PCM always is finite).
expected<void> check_finite(const SF_INFO& info, const tensor_bytes& bytes) {
  const int subtype = info.format & SF_FORMAT_SUBMASK;
  if (subtype != SF_FORMAT_FLOAT && subtype != SF_FORMAT_DOUBLE) {
    return {};
  }
  const auto* x = reinterpret_cast<const float*>(bytes.data());
  const std::size_t n = bytes.size() / sizeof(float);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      return audio_error("sample " + std::to_string(i / static_cast<std::size_t>(info.channels)) +
                         " (channel " +
                         std::to_string(i % static_cast<std::size_t>(info.channels)) + ") is " +
                         (std::isnan(x[i]) ? "NaN" : "infinite"));
    }
  }
  return {};
}

/// Bytes of float32 samples reserved before decoding for each byte of the file: a header's
/// frame count is believed only as far as the file's bytes could decode to (PCM gives 2 to 8
/// per byte, FLAC ~4 to 8, lossy codecs ~10 to 50); past that the samples grow as they decode.
constexpr std::size_t reserved_per_file_byte = 32;

/// Float32 bytes to reserve for `file` (of `file_bytes` bytes): the frames its header says and
/// one more (to see the stream end) where it says, no reallocation (which copies byte by byte
/// with this allocator) when the header is right, but never more than the file's bytes can
/// hold, whatever its header claims.
std::size_t bytes_to_reserve(const SF_INFO& info, std::size_t file_bytes, std::size_t frame_bytes) {
  if (info.frames == SF_COUNT_MAX) {
    return 0;
  }
  const std::size_t most_frames = file_bytes * reserved_per_file_byte / frame_bytes + 1;
  return (std::min(static_cast<std::size_t>(info.frames), most_frames) + 1) * frame_bytes;
}

/// Every frame of `file` (of `file_bytes` bytes), read until libsndfile has no more, as
/// float32 bytes.
expected<tensor_bytes> read_frames(const sound_file& file, std::size_t file_bytes,
                                   const audio_options& options) {
  const auto channels = static_cast<std::size_t>(file.info().channels);
  const std::size_t max_frames = static_cast<std::size_t>(options.max_samples) / channels;
  constexpr std::size_t chunk_frames = 64 * 1024;
  const std::size_t frame_bytes = channels * sizeof(float);
  tensor_bytes bytes;
  bytes.reserve(bytes_to_reserve(file.info(), file_bytes, frame_bytes));
  for (std::size_t frames = 0;;) {
    if (frames > max_frames) {
      return audio_error("more than " + std::to_string(options.max_samples) + " samples");
    }
    const std::size_t room = bytes.capacity() / frame_bytes - frames;
    const std::size_t want =
        std::min({room > 0 ? room : chunk_frames, chunk_frames, max_frames + 1 - frames});
    bytes.resize((frames + want) * frame_bytes);
    auto* out = reinterpret_cast<float*>(bytes.data()) + frames * channels;
    const sf_count_t got = sf_readf_float(file.get(), out, static_cast<sf_count_t>(want));
    frames += static_cast<std::size_t>(std::max<sf_count_t>(got, 0));
    if (got <= 0) {
      bytes.resize(frames * frame_bytes);
      return bytes;
    }
  }
}

}  // namespace

expected<decoded_audio> decode_audio(const std::uint8_t* data, std::size_t size,
                                     const audio_options& options) {
  if (size == 0) {
    return audio_error("empty part (0 bytes)");
  }
  memory_file source{data, static_cast<sf_count_t>(size), 0};
  auto file = open_sound(source);
  if (!file) {
    return file.error();
  }
  const SF_INFO& info = file->info();
  if (auto checked = check_header(info, options); !checked) {
    return checked.error();
  }
  if (info.frames != SF_COUNT_MAX) {
    if (auto kept = check_duration(info.frames, info.samplerate, options); !kept) {
      return kept.error();
    }
  }
  auto bytes = read_frames(*file, size, options);
  if (!bytes) {
    return bytes.error();
  }
  const auto channels = static_cast<std::size_t>(info.channels);
  const auto frames = static_cast<sf_count_t>(bytes->size() / (channels * sizeof(float)));
  if (info.frames != SF_COUNT_MAX && frames != info.frames) {
    return audio_error("header says " + std::to_string(info.frames) + " frames but " +
                       std::to_string(frames) + " decode (a truncated or corrupt stream)");
  }
  if (sf_error(file->get()) != SF_ERR_NO_ERROR) {
    return audio_error(std::string("libsndfile: ") + sf_strerror(file->get()));
  }
  if (auto damage = damage_in_log(file->log(), options.strict); !damage.empty()) {
    return audio_error("libsndfile reports \"" + damage + "\"");
  }
  if (auto finite = check_finite(info, *bytes); !finite) {
    return finite.error();
  }
  if (auto kept = check_duration(frames, info.samplerate, options); !kept) {
    return kept.error();
  }
  decoded_audio out;
  out.sample_rate = info.samplerate;
  out.samples.type = dtype::float32;
  out.samples.rank = 2;
  out.samples.shape = {frames, info.channels, 0, 0};
  out.samples.bytes = std::move(*bytes);
  return out;
}

expected<host_array> mono_downmix(host_array samples) {
  if (samples.type != dtype::float32 || samples.rank != 2 || samples.extent(1) == 0) {
    return error(errc::invalid_argument,
                 "mono_downmix takes float32 [frames, channels > 0], not " + describe(samples));
  }
  if (samples.extent(1) == 1) {
    samples.rank = 1;
    samples.shape[1] = 0;
    return samples;
  }
  const auto frames = static_cast<std::size_t>(samples.extent(0));
  const auto channels = static_cast<std::size_t>(samples.extent(1));
  auto out = host_array::uninitialized(dtype::float32, {samples.extent(0)});
  const float* in = samples.data<float>();
  float* mono = out.data<float>();
  for (std::size_t f = 0; f < frames; ++f) {
    float sum = 0.0f;
    for (std::size_t c = 0; c < channels; ++c) {
      sum += in[f * channels + c];
    }
    mono[f] = sum / static_cast<float>(channels);  // as NumPy's mean: the sum, then a division
  }
  return out;
}

}  // namespace conveyor
