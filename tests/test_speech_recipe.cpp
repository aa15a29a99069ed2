// The MLPerf RNN-T recipe (config/examples/rnnt-librispeech.toml) through the embedding API, on
// real speech made by scripts/make-speech-set (espeak-ng): both layouts users have, a
// LibriSpeech directory and WebDataset tars made with Python's tarfile, give every utterance once
// per epoch and the same features; bad files (and a transcript the vocabulary cannot spell)
// are quarantined naming the utterance and the reason while the others go on; utterances over
// max_duration are filtered and counted (and not read again); a file at another rate is resampled,
// never used as it is. (Exactness against the reference: tests/python/test_rnnt_exact.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "conveyor/pipeline.hpp"
#include "core/audio/soxr_resampler.hpp"
#include "core/base/little_endian.hpp"
#include "core/codecs/audio_decoder.hpp"
#include "support/python_tars.hpp"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

std::string recipe_text(const std::string& max_duration = "16.7") {
  std::ifstream in(std::string(CONVEYOR_SOURCE_DIR) + "/config/examples/rnnt-librispeech.toml");
  std::stringstream text;
  text << in.rdbuf();
  auto s = text.str();
  const std::string vocabulary = "config/examples/rnnt-characters.txt";
  s.replace(s.find(vocabulary), vocabulary.size(),
            std::string(CONVEYOR_SOURCE_DIR) + "/" + vocabulary);
  const std::string limit = "max_duration = 16.7";
  return s.replace(s.find(limit), limit.size(), "max_duration = " + max_duration);
}

/// What an epoch gave for one utterance.
struct utterance {
  std::vector<std::uint8_t> features;  ///< its frames' bytes (its own length, not the padding)
  std::int64_t frames = 0;
  std::vector<std::int32_t> tokens;
  std::string transcript;
  bool operator==(const utterance& o) const {
    return features == o.features && frames == o.frames && tokens == o.tokens &&
           transcript == o.transcript;
  }
};

struct epoch_result {
  std::map<std::uint64_t, utterance> utterances;  ///< of the first epoch
  std::uint64_t samples = 0;                      ///< over every epoch
  pipeline_report report;
};

// Sample i's slice of a ragged field.
template <class T>
std::vector<T> ragged_at(const field_view& f, std::size_t i) {
  const auto* values = static_cast<const T*>(f.data);
  return {values + f.offsets[i], values + f.offsets[i + 1]};
}

void take_batch(batch& b, std::map<std::uint64_t, utterance>& out) {
  auto features = b.field("features");
  auto tokens = b.field("tokens");
  auto transcript = b.field("transcript");
  ASSERT_TRUE(features && tokens && transcript);
  ASSERT_EQ(features->type, dtype::float32);
  ASSERT_EQ(features->rank, 3);  // [N, T, 240]
  ASSERT_EQ(features->shape[2], 240);
  ASSERT_EQ(features->length_axes, 1);
  ASSERT_EQ(tokens->type, dtype::int32);
  const auto n = b.sample_ids().size();
  const auto row = static_cast<std::size_t>(features->shape[2]) * sizeof(float);
  const auto per_sample = static_cast<std::size_t>(features->shape[1]) * row;
  for (std::size_t i = 0; i < n; ++i) {
    utterance u;
    u.frames = features->lengths[i];
    EXPECT_LE(u.frames, features->shape[1]);
    const auto* at = static_cast<const std::uint8_t*>(features->data) + i * per_sample;
    u.features.assign(at, at + static_cast<std::size_t>(u.frames) * row);
    // The padding is zeros.
    EXPECT_TRUE(std::all_of(at + u.features.size(), at + per_sample,
                            [](std::uint8_t v) { return v == 0; }));
    u.tokens = ragged_at<std::int32_t>(*tokens, i);
    auto text = ragged_at<char>(*transcript, i);
    u.transcript.assign(text.begin(), text.end());
    EXPECT_TRUE(out.emplace(b.sample_ids()[i], std::move(u)).second)
        << "sample " << b.sample_ids()[i] << " twice";
  }
}

epoch_result run(const fs::path& dir, const std::string& format, int epochs = 1,
                 const std::string& text = recipe_text()) {
  auto p = pipeline::from_toml(text, {"dataset.path=" + dir.string(), "dataset.format=" + format,
                                      "gpus=1", "pipeline.preprocessors=2", "pipeline.batch_size=8",
                                      "trainer.epochs=" + std::to_string(epochs)});
  EXPECT_TRUE(p) << (p ? "" : p.error().what());
  epoch_result out;
  if (!p) {
    return out;
  }
  for (int e = 0; e < epochs; ++e) {
    std::map<std::uint64_t, utterance> seen;
    for (auto& b : p->epoch(static_cast<std::uint64_t>(e), 0)) {
      take_batch(b, seen);
    }
    out.samples += seen.size();
    if (e == 0) {
      out.utterances = std::move(seen);
    }
  }
  out.report = p->report();
  return out;
}

// The characters the recipe's vocabulary gives ids 0..27.
std::vector<std::int32_t> expected_tokens(const std::string& transcript) {
  std::vector<std::int32_t> out;
  for (char c : transcript) {
    out.push_back(c == ' ' ? 0 : c == '\'' ? 27 : std::tolower(c) - 'a' + 1);
  }
  return out;
}

class SpeechRecipe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_espeak()) {
      GTEST_SKIP() << "espeak-ng is not installed (scripts/install-deps installs it)";
    }
  }
};

TEST_F(SpeechRecipe, BothLayoutsGiveEveryUtteranceOnceWithTheSameFeatures) {
  testing::temp_dir dir;
  auto set = testing::make_speech_set(dir, 12, 5);
  auto from_dir = run(set.dir, "librispeech");
  auto from_tars = run(set.tars, "webdataset");
  ASSERT_EQ(from_dir.utterances.size(), 12u);
  EXPECT_EQ(from_dir.report.quarantined, 0u);
  EXPECT_EQ(from_tars.report.quarantined, 0u);
  EXPECT_EQ(from_dir.report.filtered, 0u);
  // Ids follow the keys' order in both: the same draws, so the same features, bit for bit.
  EXPECT_TRUE(from_dir.utterances == from_tars.utterances) << "the layouts' samples differ";
  for (const auto& [id, u] : from_dir.utterances) {
    EXPECT_GT(u.frames, 10) << id;
    EXPECT_FALSE(u.transcript.empty());
    EXPECT_EQ(u.tokens, expected_tokens(u.transcript)) << u.transcript;
  }
}

/// A 16-bit PCM WAV of `samples` at `rate` whose data chunk says `claimed` bytes (its real
/// size when negative).
std::vector<std::uint8_t> wav(const std::vector<std::int16_t>& samples, std::uint32_t rate,
                              std::int64_t claimed = -1) {
  const auto data = static_cast<std::uint32_t>(samples.size() * 2);
  const auto said = claimed < 0 ? data : static_cast<std::uint32_t>(claimed);
  std::vector<std::uint8_t> out(44 + data);
  std::memcpy(out.data(), "RIFF", 4);
  little_endian::store(out.data() + 4, static_cast<std::uint32_t>(36 + said));
  std::memcpy(out.data() + 8, "WAVEfmt ", 8);
  little_endian::store(out.data() + 16, std::uint32_t{16});
  little_endian::store(out.data() + 20, std::uint16_t{1});  // PCM
  little_endian::store(out.data() + 22, std::uint16_t{1});  // mono
  little_endian::store(out.data() + 24, rate);
  little_endian::store(out.data() + 28, rate * 2);
  little_endian::store(out.data() + 32, std::uint16_t{2});
  little_endian::store(out.data() + 34, std::uint16_t{16});
  std::memcpy(out.data() + 36, "data", 4);
  little_endian::store(out.data() + 40, said);
  std::memcpy(out.data() + 44, samples.data(), data);
  return out;
}

/// The 16-bit samples of an utterance of the set, `seconds` long (a tone's worth of speech is
/// enough for a bad file: its header or its bytes are what is wrong).
std::vector<std::int16_t> some_speech(const fs::path& flac, double seconds = 1.0) {
  auto bytes = testing::read_file(flac);
  auto audio = decode_audio(bytes);
  EXPECT_TRUE(audio) << (audio ? "" : audio.error().what());
  std::vector<std::int16_t> out;
  const float* x = audio->samples.data<float>();
  for (std::size_t i = 0;
       i < static_cast<std::size_t>(seconds * 16000) && i < audio->samples.element_count(); ++i) {
    out.push_back(static_cast<std::int16_t>(x[i] * 32767.0F));
  }
  return out;
}

fs::path first_flac(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".flac") {
      return e.path();
    }
  }
  return {};
}

TEST_F(SpeechRecipe, BadFilesAreQuarantinedNamingTheUtteranceAndTheReason) {
  testing::temp_dir dir;
  auto set = testing::make_speech_set(dir, 6, 6);
  const auto good = first_flac(set.dir);
  const auto speech = some_speech(good);
  const auto bad = set.dir / "900" / "0";
  fs::create_directories(bad);
  // A FLAC whose frames are damaged (the header and the first frame survive).
  auto flac = testing::read_file(good);
  for (std::size_t i = flac.size() / 2; i < flac.size() / 2 + 64; ++i) {
    flac[i] = static_cast<std::uint8_t>(flac[i] ^ 0x5A);
  }
  testing::write_file(bad / "900-0-0000.flac", flac);
  testing::write_file(bad / "900-0-0001.flac", {});                             // 0 bytes
  testing::write_file(bad / "900-0-0002.wav", wav(speech, 16000, 10 * 32000));  // lies
  testing::write_file(bad / "900-0-0003.wav", wav(speech, 0));                  // rate 0
  testing::write_file(bad / "900-0-0004.flac", testing::read_file(good));
  testing::write_file(bad / "900-0-0005.flac", testing::read_file(good));
  std::ofstream(bad / "900-0.trans.txt", std::ios::binary)
      << "900-0-0000 DAMAGED\n900-0-0001 EMPTY\n900-0-0002 LIES\n900-0-0003 NO RATE\n"
      << "900-0-0004 CAF\xE9 LATIN ONE\n900-0-0005 ROOM 101\n";

  auto r = run(set.dir, "librispeech");
  EXPECT_EQ(r.utterances.size(), 6u) << "the good utterances go on";
  EXPECT_EQ(r.report.quarantined, 6u);
  const std::map<std::string, std::string> reasons{
      {"900-0-0000", "a truncated or corrupt stream"},
      {"900-0-0001", "empty part (0 bytes)"},
      {"900-0-0002", "data : 320000 (should be 32000)"},
      {"900-0-0003", "its fmt chunk says 0 Hz"},
      {"900-0-0004", "not UTF-8"},
      {"900-0-0005", "step tokenize: its transcript: no token for '1' (U+0031) at byte 5"}};
  testing::expect_quarantined(r.report.quarantined_samples, reasons);
}

TEST_F(SpeechRecipe, LongUtterancesAreFilteredAndCountedEveryEpoch) {
  testing::temp_dir dir;
  auto set = testing::make_speech_set(dir, 10, 10);
  std::vector<double> seconds;
  for (const auto& e : fs::recursive_directory_iterator(set.dir)) {
    if (e.path().extension() == ".flac") {
      auto audio = decode_audio(testing::read_file(e.path()));
      ASSERT_TRUE(audio);
      seconds.push_back(static_cast<double>(audio->samples.extent(0)) / 16000);
    }
  }
  ASSERT_EQ(seconds.size(), 10u);
  std::sort(seconds.begin(), seconds.end());
  ASSERT_LT(seconds[3], seconds[4]);
  const double limit = (seconds[3] + seconds[4]) / 2;  // the six longest go
  const std::uint64_t longer = 6;
  auto r = run(set.dir, "librispeech", 2, recipe_text(std::to_string(limit)));
  EXPECT_EQ(r.report.filtered, 2 * longer) << "filtered in each epoch";
  EXPECT_EQ(r.report.quarantined, 0u) << "a filter's decision is no fault";
  EXPECT_EQ(r.report.lost, 0u);
  EXPECT_EQ(r.report.delivered, 2 * (10 - longer));
  EXPECT_EQ(r.samples, 2 * (10 - longer));
  for (const auto& [id, u] : r.utterances) {
    EXPECT_LE(u.frames, (limit * 16000 * 1.15 / 160 + 3) / 3) << id;
  }
  // (That a filtered sample is not read again once known: test_batcher_core.)
}

TEST_F(SpeechRecipe, AFileAtAnotherRateIsResampledNotUsedAsItIs) {
  testing::temp_dir dir;
  auto set = testing::make_speech_set(dir, 4, 4);
  const auto speech = some_speech(first_flac(set.dir), 2.0);
  std::vector<float> x(speech.begin(), speech.end());
  for (auto& v : x) {
    v /= 32768.0F;
  }
  auto at_22k = soxr_resample(x.data(), x.size(), 1, 16000, 22050);
  ASSERT_TRUE(at_22k);
  std::vector<std::int16_t> pcm;
  for (float v : *at_22k) {
    pcm.push_back(static_cast<std::int16_t>(std::lround(std::clamp(v, -1.0F, 0.99997F) * 32768)));
  }
  const auto other = set.dir / "901" / "0";
  fs::create_directories(other);
  testing::write_file(other / "901-0-0000.wav", wav(pcm, 22050));
  testing::write_file(other / "901-0-0001.wav", wav(speech, 16000));
  std::ofstream(other / "901-0.trans.txt") << "901-0-0000 AT TWENTY TWO\n901-0-0001 AT SIXTEEN\n";
  // Without speed perturbation the two give the same number of frames.
  auto text = recipe_text();
  const std::string speed = "min = 0.85\nmax = 1.15";
  text.replace(text.find(speed), speed.size(), "min = 1.0\nmax = 1.0");
  auto r = run(set.dir, "librispeech", 1, text);
  EXPECT_EQ(r.report.quarantined, 0u);
  std::int64_t frames_22k = -1;
  std::int64_t frames_16k = -1;
  for (const auto& [id, u] : r.utterances) {
    frames_22k = u.transcript == "AT TWENTY TWO" ? u.frames : frames_22k;
    frames_16k = u.transcript == "AT SIXTEEN" ? u.frames : frames_16k;
  }
  EXPECT_GT(frames_16k, 0);
  EXPECT_NEAR(static_cast<double>(frames_22k), static_cast<double>(frames_16k), 1.0)
      << "22.05 kHz taken as 16 kHz would be 38% longer";
}

TEST_F(SpeechRecipe, ARateThatWouldResampleBeyondTheBoundIsQuarantined) {
  testing::temp_dir dir;
  auto set = testing::make_speech_set(dir, 4, 4);
  const auto odd = set.dir / "902" / "0";
  fs::create_directories(odd);
  // A header that says 1 Hz: a million samples would become 16 billion at 16 kHz.
  testing::write_file(odd / "902-0-0000.wav", wav(std::vector<std::int16_t>(1 << 20, 100), 1));
  std::ofstream(odd / "902-0.trans.txt") << "902-0-0000 ONE HERTZ\n";
  auto r = run(set.dir, "librispeech", 1, recipe_text("0"));  // no duration filter
  EXPECT_EQ(r.utterances.size(), 4u);
  EXPECT_EQ(r.report.quarantined, 1u);
  testing::expect_quarantined(r.report.quarantined_samples,
                              {{"902-0-0000", "would resample to 16777216000 at 16000 Hz"}});
}

}  // namespace
}  // namespace conveyor
