// The audio decoder against python3-soundfile's own files and its reading of them (written at
// test time on this machine, through the same libsndfile), and damaged or hostile files.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/codecs/audio_decoder.hpp"
#include "support/reference_files.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

/// The largest block operator new was asked for since a test reset it (replaced below, for
/// this test binary only): what decode_audio reserved.
std::atomic<std::size_t> largest_new{0};

}  // namespace
}  // namespace conveyor

// malloc and free behind new and delete, as the library's own do: GCC cannot tell.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  auto seen = conveyor::largest_new.load();
  while (seen < size && !conveyor::largest_new.compare_exchange_weak(seen, size)) {
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t /*size*/) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace conveyor {
namespace {

using bytes = std::vector<std::uint8_t>;

/// A FLAC file of a STREAMINFO block alone, whose header says `frames` frames of 16 kHz 16-bit
/// mono and which holds none of them.
bytes flac_header_claiming(std::uint64_t frames) {
  bytes out = {'f', 'L', 'a', 'C', 0x80, 0, 0, 34};  // the last metadata block: 34 bytes
  // Blocks of 4096 frames; the sizes of its frames unknown.
  const std::uint8_t block_sizes[] = {0x10, 0x00, 0x10, 0x00, 0, 0, 0, 0, 0, 0};
  out.insert(out.end(), std::begin(block_sizes), std::end(block_sizes));
  // 20 bits of rate, 3 of channels - 1, 5 of bits - 1, 36 of frames.
  const std::uint64_t packed =
      (std::uint64_t{16000} << 44) | (std::uint64_t{15} << 36) | (frames & ((1ULL << 36) - 1));
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<std::uint8_t>(packed >> shift));
  }
  out.resize(out.size() + 16);  // MD5 of the audio: unknown
  return out;
}

std::vector<float> floats(const bytes& raw) {
  std::vector<float> out(raw.size() / sizeof(float));
  std::memcpy(out.data(), raw.data(), out.size() * sizeof(float));
  return out;
}

std::vector<float> floats(const host_array& array) {
  const float* v = array.data<float>();
  return std::vector<float>(v, v + array.element_count());
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  return worst;
}

class SoundfileFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::temp_dir>();
    status_ = testing::write_references("write_audio_references.py", dir_->path());
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    if (status_ == 77) {
      GTEST_SKIP() << "NumPy or soundfile is missing (Debian: python3-numpy python3-soundfile)";
    }
    ASSERT_EQ(status_, 0) << "write_audio_references.py failed";
  }
  static bytes file(const std::string& name) { return testing::read_file(dir_->path() / name); }
  static std::vector<std::vector<std::string>> cases(bool bad) {
    std::vector<std::vector<std::string>> out;
    for (auto& line : testing::read_manifest(dir_->path() / "manifest.txt")) {
      if ((line[0] == "bad") == bad) {
        out.push_back(std::move(line));
      }
    }
    return out;
  }
  static expected<decoded_audio> decode(const std::string& name, bool strict = true) {
    audio_options options;
    options.strict = strict;
    return decode_audio(file(name), options);
  }
  static void expect_refused(const std::string& name, const std::string& why) {
    auto audio = decode(name);
    ASSERT_FALSE(audio) << name << " decoded to " << describe(audio->samples);
    EXPECT_EQ(audio.error().code(), errc::decode_error);
    EXPECT_NE(audio.error().message().find(why), std::string::npos)
        << name << ": " << audio.error().message();
  }

  static std::unique_ptr<testing::temp_dir> dir_;
  static int status_;
};
std::unique_ptr<testing::temp_dir> SoundfileFiles::dir_;
int SoundfileFiles::status_ = -1;

TEST_F(SoundfileFiles, EveryFormatDecodesToTheSamplesSoundfileReads) {
  const auto good = cases(false);
  ASSERT_EQ(good.size(), 10u);
  for (const auto& c : good) {
    SCOPED_TRACE(c[0]);
    auto audio = decode(c[1]);
    ASSERT_TRUE(audio) << audio.error().what();
    EXPECT_EQ(audio->sample_rate, std::stoi(c[2]));
    EXPECT_EQ(describe(audio->samples), "float32 [" + c[3] + ", " + c[4] + "]");
    const auto samples = floats(audio->samples);
    const auto read = floats(file(c[0] + ".ref"));
    const auto source = floats(file(c[0] + ".src"));
    if (c[5] == "exact") {
      // PCM and FLAC: what soundfile reads, which is the integers scaled by 2^(bits-1).
      EXPECT_EQ(samples, read);
      EXPECT_EQ(samples, source);
    } else {
      // Vorbis, Opus and MP3 are lossy: what soundfile reads up to the decoders' float
      // rounding (mpg123's output depends on how many frames a call asks for), and close to
      // the tones that were encoded.
      EXPECT_LT(max_abs_difference(samples, read), 1e-5f);
      EXPECT_LT(max_abs_difference(samples, source), 0.05f);
    }
  }
}

TEST_F(SoundfileFiles, MonoDownmixIsTheMeanOfTheChannelsAsNumpyTakesIt) {
  for (const auto& c : cases(false)) {
    SCOPED_TRACE(c[0]);
    auto audio = decode(c[1]);
    ASSERT_TRUE(audio) << audio.error().what();
    auto mono = mono_downmix(audio->samples);
    ASSERT_TRUE(mono) << mono.error().what();
    EXPECT_EQ(describe(*mono), "float32 [" + c[3] + "]");
    EXPECT_LE(max_abs_difference(floats(*mono), floats(file(c[0] + ".mono"))), 1e-7f);
  }
}

TEST_F(SoundfileFiles, DamagedAndHostileFilesAreRefusedWithTheReason) {
  ASSERT_EQ(cases(true).size(), 9u);
  expect_refused("empty.wav", "empty part (0 bytes)");
  expect_refused("noise.wav", "libsndfile cannot open it: Format not recognised");
  expect_refused("rate0.wav", "libsndfile cannot open it");
  expect_refused("channels5000.wav", "libsndfile cannot open it");
  expect_refused("truncated.flac", "(a truncated or corrupt stream)");
  expect_refused("bitflip.flac", "(a truncated or corrupt stream)");
  expect_refused("truncated.ogg", "malformed");
  // libsndfile clamps a WAV's data length to the bytes there are and says so only in its
  // log ("data : N (should be M)"): strict mode refuses such a file.
  expect_refused("truncated.wav", "(should be");
  expect_refused("lying_size.wav", "data : 1000000000 (should be 80000)");
}

TEST_F(SoundfileFiles, NonStrictModeReturnsTheWholeFramesATruncatedWavHolds) {
  const auto whole = decode("wav16_stereo.wav");
  ASSERT_TRUE(whole) << whole.error().what();
  const bytes truncated = file("truncated.wav");
  auto audio = decode("truncated.wav", false);
  ASSERT_TRUE(audio) << audio.error().what();
  // 44 header bytes, then 4 bytes a frame: a partial last frame is dropped.
  const std::int64_t frames = (static_cast<std::int64_t>(truncated.size()) - 44) / 4;
  EXPECT_EQ(describe(audio->samples), "float32 [" + std::to_string(frames) + ", 2]");
  const auto all = floats(whole->samples);
  EXPECT_EQ(floats(audio->samples),
            std::vector<float>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(frames * 2)));
  // A data length that claims more than the file holds, over complete data: all of it.
  auto lying = decode("lying_size.wav", false);
  ASSERT_TRUE(lying) << lying.error().what();
  EXPECT_EQ(floats(lying->samples), all);
}

TEST_F(SoundfileFiles, LimitsRefuseFilesFromTheirHeader) {
  audio_options options;
  options.max_samples = 1000;
  auto audio = decode_audio(file("wav16_stereo.wav"), options);
  ASSERT_FALSE(audio);
  EXPECT_NE(audio.error().message().find("header says 20000 frames of 2 channels, more than 1000"),
            std::string::npos)
      << audio.error().message();
  options = {};
  options.max_channels = 2;
  audio = decode_audio(file("wavf32_3ch.wav"), options);
  ASSERT_FALSE(audio);
  EXPECT_NE(audio.error().message().find("3 channels (at most 2)"), std::string::npos);
}

TEST_F(SoundfileFiles, EveryTruncationOfAFlacIsAnErrorNeverAnOutOfBoundsRead) {
  const bytes whole = file("flac16_stereo.flac");
  for (std::size_t size = 0; size < whole.size(); size += whole.size() / 40) {
    auto part = std::make_unique<std::uint8_t[]>(size + 1);
    std::memcpy(part.get(), whole.data(), size);
    EXPECT_FALSE(decode_audio(part.get(), size)) << size;
  }
}

TEST(AudioDecoder, AHeaderClaimingManyFramesOverFewBytesReservesOnlyWhatTheBytesCanHold) {
  // 2^27 - 1 frames of mono are within max_samples: the header passes its checks.
  const bytes file = flac_header_claiming((std::uint64_t{1} << 27) - 1);
  largest_new = 0;
  auto audio = decode_audio(file);
  const std::size_t reserved = largest_new;
  ASSERT_FALSE(audio) << describe(audio->samples);
  EXPECT_NE(audio.error().message().find("header says 134217727 frames but 0 decode"),
            std::string::npos)
      << audio.error().message();
  EXPECT_LE(reserved, std::size_t{64} << 10) << "a " << file.size() << "-byte file";
}

TEST(MonoDownmix, TakesOnlyFloatFramesByChannels) {
  EXPECT_FALSE(mono_downmix(host_array::zeros(dtype::float32, {5})));
  EXPECT_FALSE(mono_downmix(host_array::zeros(dtype::int16, {5, 2})));
  EXPECT_FALSE(mono_downmix(host_array::zeros(dtype::float32, {5, 0})));
  auto empty = mono_downmix(host_array::zeros(dtype::float32, {0, 2}));
  ASSERT_TRUE(empty);
  EXPECT_EQ(describe(*empty), "float32 [0]");
}

}  // namespace
}  // namespace conveyor
