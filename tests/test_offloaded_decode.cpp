// The decode step's GPU side (decode.on = "gpu" / "auto") on this machine, which has no GPU:
// the GPU's decoder is stood in for by one that decodes each request on the CPU exactly as the
// CPU's own decode would (the region, at 1/reduce). What is tested is the step's part: which
// region and scale it asks for, that the steps after it see the same plan whichever decoder
// took the JPEG (the same output bytes), that what the GPU declines or fails on is decoded on
// the CPU, that only the device's own failures in a row give the GPU up, and that on = "gpu"
// without a GPU decoder stops the chain naming the key. nvJPEG itself is tested on the GPU machine
// (tests/cuda/test_cuda_jpeg_decode.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/transforms/decode_share.hpp"
#include "core/transforms/jpeg_offload.hpp"
#include "core/transforms/offloaded_decode.hpp"
#include "core/transforms/transform_chain.hpp"
#include "support/jpeg_fixtures.hpp"
#include "support/step_harness.hpp"

namespace conveyor {
namespace {

enum class answer { decode, busy, decline, fail };

/// The GPU's stand-in: decodes what it is asked on the CPU, or is busy, declines, fails; counts.
class cpu_offload final : public jpeg_offload {
 public:
  explicit cpu_offload(answer a, errc failure = errc::device_error)
      : answer_(a), failure_(failure) {}

  expected<offload_result> decode(const std::uint8_t* data, std::size_t size,
                                  const offload_request& r) override {
    ++calls;
    {
      std::lock_guard lock(mutex);
      requests.push_back(r);
    }
    switch (answer_) {
      case answer::busy:
        return offload_result{offload_result::outcome::busy, {}};
      case answer::decline:
        return offload_result{};
      case answer::fail:
        return error{failure_, "CUDA device 0: an injected failure"};
      case answer::decode:
        break;
    }
    decode_options o;
    o.scale_denom = r.reduce;
    auto region = decode_jpeg_region(data, size, o, r.region);
    if (region && *region) {
      return offload_result{offload_result::outcome::decoded, std::move(**region)};
    }
    auto whole = decode_image(data, size, o);  // a progressive JPEG: the region of the whole
    if (!whole) {
      return std::move(whole).error();
    }
    const auto& g = r.region;
    return offload_result{offload_result::outcome::decoded,
                          (*whole)(cv::Rect(g.left, g.top, g.width, g.height)).clone()};
  }
  std::string describe() const override { return "the CPU standing in for a GPU"; }

  std::atomic<int> calls{0};
  std::mutex mutex;
  std::vector<offload_request> requests;

 private:
  answer answer_;
  errc failure_;
};

/// Installs `offload` as every device's decoder for the test's scope.
struct installed {
  explicit installed(std::shared_ptr<jpeg_offload> offload) {
    set_jpeg_offload_provider(
        [offload](int, int) -> expected<std::shared_ptr<jpeg_offload>> { return offload; });
  }
  ~installed() { set_jpeg_offload_provider({}); }
};

random_resized_crop_spec crop(int size) {
  random_resized_crop_spec c;
  c.height = size;
  c.width = size;
  return c;
}

transform_chain chain_of(decode_device on, std::vector<transform_spec> after, bool scaled = true) {
  decode_spec decode;
  decode.on = on;
  decode.scaled = scaled;
  std::vector<transform_spec> specs{decode};
  specs.insert(specs.end(), after.begin(), after.end());
  specs.emplace_back(to_uint8_spec{});
  auto chain = transform_chain::build(specs);
  EXPECT_TRUE(chain) << chain.error().what();
  return std::move(*chain);
}

std::vector<std::uint8_t> output(const transform_chain& chain, std::vector<std::uint8_t> jpeg,
                                 std::uint64_t id) {
  auto s = testing::sample_with_bytes(std::move(jpeg));
  s.sample_id = id;
  s.key = "img_" + std::to_string(id) + ".jpg";
  s.epoch_seed = 7;
  auto ok = chain.run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  const auto& bytes = testing::array_of(s).bytes;
  return {bytes.begin(), bytes.end()};
}

/// JPEGs of several sizes (small to 2400 px) and subsamplings, one progressive.
std::vector<std::vector<std::uint8_t>> jpegs() {
  std::vector<std::vector<std::uint8_t>> out;
  const int sizes[][2] = {{320, 240}, {640, 480}, {1200, 900}, {2400, 1600}, {900, 1400}};
  std::uint32_t seed = 1;
  for (const auto& wh : sizes) {
    for (int subsampling : {TJSAMP_420, TJSAMP_444}) {
      out.push_back(test::encode(test::photo(wh[0], wh[1], seed++), subsampling));
    }
  }
  out.push_back(test::encode(test::photo(1500, 1000, seed), TJSAMP_420, TJFLAG_PROGRESSIVE));
  return out;
}

/// Every JPEG through `on` with the offload installed gives the bytes the CPU alone gives.
void expect_same_as_cpu(const std::vector<transform_spec>& after, bool scaled) {
  auto on_cpu = chain_of(decode_device::cpu, after, scaled);
  auto on_gpu = chain_of(decode_device::gpu, after, scaled);
  auto files = jpegs();  // strict, as decode.strict is by default: every request says so
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(output(on_gpu, files[i], i), output(on_cpu, files[i], i)) << "jpeg " << i;
  }
}

TEST(OffloadedDecode, WhatTheGpuDecodesReachesTheNextStepsAsTheCpusDecodeWould) {
  auto offload = std::make_shared<cpu_offload>(answer::decode);
  installed scope(offload);
  expect_same_as_cpu({crop(224)}, true);  // region at a DCT scale
  // Each size group's first 3 images go to the GPU (then 3 to the CPU).
  std::map<int, int> per_group;
  int first_tries = 0;
  for (const auto& file : jpegs()) {
    auto info = probe_image(file);
    ASSERT_TRUE(info);
    int& n = per_group[decode_share::group_of(std::int64_t{info->width} * info->height)];
    first_tries += n++ < 3 ? 1 : 0;
  }
  EXPECT_EQ(offload->calls.load(), first_tries);
  bool reduced = false;
  for (const auto& r : offload->requests) {
    reduced = reduced || r.reduce > 1;
    EXPECT_TRUE(r.reduce == 1 || r.reduce == 2 || r.reduce == 4 || r.reduce == 8);
    EXPECT_LE(
        std::int64_t{r.region.width} * r.region.height,
        std::int64_t{(r.width + r.reduce - 1) / r.reduce} * ((r.height + r.reduce - 1) / r.reduce));
  }
  EXPECT_TRUE(reduced) << "no large JPEG was asked for at a reduced scale";
}

TEST(OffloadedDecode, AResizeOrNoPlanAsksForTheWholeImage) {
  auto offload = std::make_shared<cpu_offload>(answer::decode);
  installed scope(offload);
  resize_spec resize;
  resize.size = 200;
  expect_same_as_cpu({resize}, true);      // whole image at a DCT scale
  expect_same_as_cpu({crop(224)}, false);  // scaled = false: no plan, whole, 1/1
  for (const auto& r : offload->requests) {
    EXPECT_EQ(r.region.left, 0);
    EXPECT_EQ(r.region.top, 0);
    EXPECT_EQ(r.region.width, (r.width + r.reduce - 1) / r.reduce);
  }
}

TEST(OffloadedDecode, WhatTheGpuDeclinesTheCpuDecodes) {
  auto offload = std::make_shared<cpu_offload>(answer::decline);
  installed scope(offload);
  expect_same_as_cpu({crop(224)}, true);
  EXPECT_GT(offload->calls.load(), 0);
}

TEST(OffloadedDecode, WhatFindsEveryLaneBusyTheCpuDecodesAndTheGpuIsStillAskedFirst) {
  auto offload = std::make_shared<cpu_offload>(answer::busy);
  installed scope(offload);
  expect_same_as_cpu({crop(224)}, true);
  // Busy lanes are no measurement: no group turned to the CPU for them.
  EXPECT_EQ(offload->calls.load(), static_cast<int>(jpegs().size()));
}

TEST(OffloadedDecode, WhatTheGpuFailsOnTheCpuDecodes) {
  auto offload = std::make_shared<cpu_offload>(answer::fail);
  installed scope(offload);
  auto on_cpu = chain_of(decode_device::cpu, {crop(224)});
  auto on_gpu = chain_of(decode_device::gpu, {crop(224)});
  auto files = jpegs();
  for (std::uint64_t i = 0; i < 60; ++i) {
    const auto& jpeg = files[i % files.size()];
    ASSERT_EQ(output(on_gpu, jpeg, i), output(on_cpu, jpeg, i)) << "sample " << i;
  }
  EXPECT_GT(offload->calls.load(), 0);
}

TEST(OffloadedDecode, OnlyTheDevicesOwnFailuresCountTowardsGivingItUp) {
  decode_share::options o;
  o.first_tries = 1000;  // every JPEG goes to the GPU first
  o.give_up_after = 3;
  auto jpeg = jpegs().front();
  auto info = probe_image(jpeg);
  ASSERT_TRUE(info);
  offload_request r;
  r.width = info->width;
  r.height = info->height;
  r.region = {0, 0, info->width, info->height};
  for (errc e : {errc::decode_error, errc::invalid_argument, errc::device_error}) {
    offloaded_decode d(std::make_shared<cpu_offload>(answer::fail, e), o);
    for (std::uint64_t i = 0; i < 10; ++i) {
      EXPECT_FALSE(d.try_gpu(jpeg.data(), jpeg.size(), r, i));
    }
    auto t = d.totals();
    EXPECT_EQ(t.gpu_given_up, e == errc::device_error) << to_string(e);
    EXPECT_EQ(t.gpu_failed, e == errc::device_error ? 3 : 0) << to_string(e);
    EXPECT_EQ(t.gpu_declined, e == errc::device_error ? 0 : 10) << to_string(e);
  }
}

TEST(OffloadedDecode, OnGpuWithoutAGpuDecoderStopsTheChainNamingTheKeyAndAutoUsesTheCpu) {
  set_jpeg_offload_provider({});  // as in a build without CUDA
  decode_spec decode;
  decode.on = decode_device::gpu;
  auto chain = transform_chain::build({decode, crop(224), to_uint8_spec{}});
  ASSERT_FALSE(chain);
  EXPECT_EQ(chain.error().code(), errc::invalid_argument);
  EXPECT_NE(chain.error().message().find("on = \"gpu\": no GPU decoder for CUDA device 0: this "
                                         "build has no CUDA"),
            std::string::npos)
      << chain.error().message();

  installed scope(nullptr);
  set_jpeg_offload_provider([](int device, int) -> expected<std::shared_ptr<jpeg_offload>> {
    return error{errc::not_found, "no device " + std::to_string(device)};
  });
  decode.gpu = 3;
  chain = transform_chain::build({decode, crop(224), to_uint8_spec{}});
  ASSERT_FALSE(chain);
  EXPECT_NE(chain.error().message().find("CUDA device 3: no device 3"), std::string::npos)
      << chain.error().message();

  auto on_auto = chain_of(decode_device::automatic, {crop(224)});
  auto on_cpu = chain_of(decode_device::cpu, {crop(224)});
  auto jpeg = jpegs().front();
  EXPECT_EQ(output(on_auto, jpeg, 1), output(on_cpu, jpeg, 1));
}

TEST(OffloadedDecode, OnGpuIsForImagesAndItsSettingsAreChecked) {
  decode_spec npy;
  npy.from = "npy";
  npy.type = dtype::float32;
  npy.on = decode_device::automatic;
  auto chain = transform_chain::build({npy});
  ASSERT_FALSE(chain);
  EXPECT_NE(chain.error().message().find("decodes JPEG images"), std::string::npos)
      << chain.error().message();
  decode_spec lanes;
  lanes.gpu_lanes = 0;
  chain = transform_chain::build({lanes, to_uint8_spec{}});
  ASSERT_FALSE(chain);
  EXPECT_NE(chain.error().message().find("gpu_lanes in [1, 64]"), std::string::npos);
}

}  // namespace
}  // namespace conveyor
