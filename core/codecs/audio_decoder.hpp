#pragma once
/// Audio decoding through libsndfile, from bytes in memory: WAV (PCM, float, A-law, ...),
/// FLAC, OGG (Vorbis, Opus), MP3, AIFF, AU and the other formats libsndfile 1.2 reads.
/// Samples come as float32 the way libsndfile scales them (integer PCM divided by 2^(bits-1):
/// int16 / 32768), frames by channels, interleaved: a host_array [frames, channels].

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

struct decoded_audio {
  host_array samples;   ///< float32 [frames, channels]; frames may be 0 (a file of no audio)
  int sample_rate = 0;  ///< frames per second, > 0
};

struct audio_options {
  /// A file that decodes to fewer frames than its header says, or on which libsndfile logs
  /// a damaged stream, is an error in both modes. Strict mode also refuses a WAV whose data
  /// chunk claims more bytes than the file holds (a truncated file, or a streaming writer's
  /// placeholder size): libsndfile itself clamps the length to what is there and decodes
  /// those frames, which is what non-strict mode returns (a trailing partial frame dropped).
  bool strict = true;
  /// Files with more channels are refused from their header.
  int max_channels = 256;
  /// Files of more samples (frames x channels) are refused, from the header where it says
  /// how many, else once decoding passes the limit: 2^27 floats (512 MiB), 23 minutes of
  /// 48 kHz stereo.
  std::int64_t max_samples = std::int64_t{1} << 27;
  /// Files longer than this many seconds (frames / rate) are left out with errc::filtered:
  /// from the header, before anything is decoded, where it says how many frames (else once
  /// decoded). 0: any length.
  double max_seconds = 0.0;
};

/// Decodes all of an audio file. errc::decode_error names what is wrong: no bytes, a format
/// libsndfile does not recognise or finds malformed (its message), a sample rate or channel
/// count out of range, too many samples, a truncated or corrupt stream (fewer frames than
/// the header says, e.g. a damaged FLAC frame), a NaN or infinite sample (in a float file);
/// the caller adds which part it was. errc::filtered: longer than options.max_seconds.
/// Memory: before decoding it reserves room for the frames the header says, but never more
/// than 32 bytes of samples for each byte of the file, whatever the header claims; past that
/// the samples grow as they decode, up to options.max_samples.
/// Thread-safe: opening takes a process-wide lock, because libsndfile reports a failed open
/// through process-wide state; decoding runs unlocked, one handle per call.
/// Known cost: libsndfile 1.2.0 leaks libvorbis's state (~5.7 KB) for each OGG it refuses as
/// malformed (LeakSanitizer shows it; the leak is inside libsndfile, nothing here can free it).
expected<decoded_audio> decode_audio(const std::uint8_t* data, std::size_t size,
                                     const audio_options& options = {});
inline expected<decoded_audio> decode_audio(const std::vector<std::uint8_t>& bytes,
                                            const audio_options& options = {}) {
  return decode_audio(bytes.data(), bytes.size(), options);
}

/// The mean of the channels of float32 [frames, channels] `samples`: float32 [frames] (one
/// channel keeps its bytes: no copy). errc::invalid_argument when `samples` is not float32 of
/// rank 2. Thread-safe (pure).
expected<host_array> mono_downmix(host_array samples);

}  // namespace conveyor
