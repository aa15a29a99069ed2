// Numbers from JSON parts as arrays: scalars, boxes, nested arrays; ragged, mistyped, hostile
// and oversized documents refused naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/codecs/json_decoder.hpp"

namespace conveyor {
namespace {

const std::string detection = R"({
  "boxes": [[10.5, 20, 30.25, 40], [0, 0, 1, 1], [5, 6, 7, 8]],
  "classes": [1, 5, 7],
  "none": [],
  "image": {"id": 42, "size": [480, 640], "crowd": false, "name": "x.jpg"},
  "grid": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
  "ragged": [[1, 2, 3, 4], [1, 2, 3]],
  "deep": [[[[[1]]]]],
  "mixed": [1, [2]],
  "big": [300, -1, 70000],
  "halves": [1.0, 2.5]
})";

expected<host_array> take(const std::string& key, dtype type,
                          const std::vector<std::int64_t>& inner = {}) {
  return json_to_array(reinterpret_cast<const std::uint8_t*>(detection.data()), detection.size(),
                       key, type, inner);
}

template <class T>
std::vector<T> values(const host_array& a) {
  const T* v = a.data<T>();
  return std::vector<T>(v, v + a.element_count());
}

void expect_refused(const expected<host_array>& result, errc code, const std::string& why) {
  ASSERT_FALSE(result) << "read " << describe(*result);
  EXPECT_EQ(result.error().code(), code);
  EXPECT_NE(result.error().message().find(why), std::string::npos) << result.error().message();
}

TEST(JsonDecoder, BoxesAndClassesOfADetectionSample) {
  auto boxes = take("boxes", dtype::float32, {4});
  ASSERT_TRUE(boxes) << boxes.error().what();
  EXPECT_EQ(describe(*boxes), "float32 [3, 4]");
  EXPECT_EQ(values<float>(*boxes),
            (std::vector<float>{10.5f, 20, 30.25f, 40, 0, 0, 1, 1, 5, 6, 7, 8}));
  auto classes = take("classes", dtype::int64);
  ASSERT_TRUE(classes) << classes.error().what();
  EXPECT_EQ(describe(*classes), "int64 [3]");
  EXPECT_EQ(values<std::int64_t>(*classes), (std::vector<std::int64_t>{1, 5, 7}));
}

TEST(JsonDecoder, AnEmptyArrayTakesTheInnerShapeTheCallerKnows) {
  auto none = take("none", dtype::float32, {4});
  ASSERT_TRUE(none) << none.error().what();
  EXPECT_EQ(describe(*none), "float32 [0, 4]");
  auto plain = take("none", dtype::int32);
  ASSERT_TRUE(plain) << plain.error().what();
  EXPECT_EQ(describe(*plain), "int32 [0]");
}

TEST(JsonDecoder, ScalarsNestedKeysIndicesAndRanksUpToFour) {
  auto id = take("image.id", dtype::int32);
  ASSERT_TRUE(id) << id.error().what();
  EXPECT_EQ(describe(*id), "int32 []");
  EXPECT_EQ(values<std::int32_t>(*id), std::vector<std::int32_t>{42});
  auto width = take("image.size.1", dtype::int16);
  ASSERT_TRUE(width) << width.error().what();
  EXPECT_EQ(values<std::int16_t>(*width), std::vector<std::int16_t>{640});
  auto grid = take("grid", dtype::uint8);
  ASSERT_TRUE(grid) << grid.error().what();
  EXPECT_EQ(describe(*grid), "uint8 [2, 2, 2]");
  EXPECT_EQ(values<std::uint8_t>(*grid), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  auto box = take("boxes.0", dtype::float16);
  ASSERT_TRUE(box) << box.error().what();
  EXPECT_EQ(describe(*box), "float16 [4]");
  // 10.5, 20, 30.25 and 40 as IEEE halves (NumPy's float16 bits).
  EXPECT_EQ(values<std::uint16_t>(*box),
            (std::vector<std::uint16_t>{0x4940, 0x4d00, 0x4f90, 0x5100}));
  auto whole =
      json_to_array(reinterpret_cast<const std::uint8_t*>("[[1, 2]]"), 8, "", dtype::int32);
  ASSERT_TRUE(whole) << whole.error().what();
  EXPECT_EQ(describe(*whole), "int32 [1, 2]");
}

TEST(JsonDecoder, RaggedAndMixedNestingIsAnErrorNamingTheKeyAndIndex) {
  expect_refused(take("ragged", dtype::int32), errc::decode_error,
                 "json 'ragged'[1]: [1,2,3] is not an array of 4 like the first one");
  expect_refused(take("mixed", dtype::int32), errc::decode_error,
                 "json 'mixed'[1]: [2] is not a number");
  expect_refused(take("deep", dtype::int32), errc::decode_error, "deeper than rank 4");
  expect_refused(take("boxes", dtype::float32, {3}), errc::decode_error,
                 "json 'boxes': inner extents [4] where [3] were asked for");
  expect_refused(take("image.id", dtype::float32, {4}), errc::decode_error,
                 "inner extents [] where [4] were asked for");
}

TEST(JsonDecoder, AShapeFromTheFirstElementsIsCheckedBeforeAnythingIsAllocated) {
  // The first elements say 1000 x 1000 x 1000 x 1000 (10^12 numbers) in 14 KB of text; the
  // others are not arrays.
  std::string text = "[0";
  for (int i = 0; i < 999; ++i) {
    text += ",0";
  }
  text += "]";
  for (int level = 0; level < 3; ++level) {
    std::string outer = "[" + text;
    for (int i = 0; i < 999; ++i) {
      outer += ",1";
    }
    text = outer + "]";
  }
  auto array = json_to_array(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), "",
                             dtype::float32);
  expect_refused(array, errc::decode_error,
                 "json document[0][0][1]: 1 is not an array of 1000 like the first one");
}

TEST(JsonDecoder, NumbersMustFitTheDtype) {
  expect_refused(take("big", dtype::uint8), errc::decode_error,
                 "json 'big'[0]: 300 is not an integer in uint8's range");
  expect_refused(take("big", dtype::int16), errc::decode_error, "json 'big'[2]");
  expect_refused(take("halves", dtype::int32), errc::decode_error,
                 "json 'halves'[1]: 2.5 is not an integer in int32's range");
  auto whole = take("halves.0", dtype::int32);
  ASSERT_TRUE(whole) << whole.error().what();
  EXPECT_EQ(values<std::int32_t>(*whole), std::vector<std::int32_t>{1});
  expect_refused(take("image.crowd", dtype::uint8), errc::decode_error,
                 "json 'image.crowd': false is not a number");
  expect_refused(take("image.name", dtype::uint8), errc::decode_error, "is not a number");
  expect_refused(take("image", dtype::uint8), errc::decode_error, "is not a number");
  auto huge =
      json_to_array(reinterpret_cast<const std::uint8_t*>("[70000]"), 7, "", dtype::float16);
  expect_refused(huge, errc::decode_error, "70000 is outside float16");
  auto i64 = json_to_array(reinterpret_cast<const std::uint8_t*>("[9223372036854775808]"), 21, "",
                           dtype::int64);
  expect_refused(i64, errc::decode_error, "not an integer in int64's range");
  auto f64 = json_to_array(reinterpret_cast<const std::uint8_t*>("[9.3e18]"), 8, "", dtype::int64);
  expect_refused(f64, errc::decode_error, "not an integer in int64's range");
}

TEST(JsonDecoder, MissingKeysAndBadRequestsAreTheirOwnErrors) {
  expect_refused(take("masks", dtype::uint8), errc::not_found, "json 'masks': no such key");
  expect_refused(take("image.size.2", dtype::uint8), errc::not_found, "'image.size.2'");
  expect_refused(take("classes.x", dtype::uint8), errc::not_found, "'classes.x'");
  expect_refused(take("classes", dtype::bfloat16), errc::invalid_argument, "ask float32");
  expect_refused(take("classes", dtype::int32, {1, 2, 3, 4}), errc::invalid_argument,
                 "inner_shape");
  expect_refused(take("classes", dtype::int32, {-1}), errc::invalid_argument, "inner_shape");
}

TEST(JsonDecoder, OneParseServesSeveralFields) {
  auto document = json_document::parse(detection);
  ASSERT_TRUE(document) << document.error().what();
  EXPECT_TRUE(json_array(*document, "boxes", dtype::float32, {4}));
  EXPECT_TRUE(json_array(*document, "classes", dtype::int32));
}

TEST(JsonDecoder, MalformedHostileAndOversizedDocumentsAreRefused) {
  auto parse = [](const std::string& text, const json_limits& limits = {}) {
    auto document = json_document::parse(text, limits);
    return document ? std::string() : document.error().message();
  };
  EXPECT_NE(parse("{\"a\": [1, 2").find("json: [json.exception.parse_error"), std::string::npos);
  EXPECT_NE(parse("").find("parse_error"), std::string::npos);
  EXPECT_NE(parse("[1e400]").find("number overflow"), std::string::npos);
  EXPECT_NE(parse("{\"a\": \"\xff\"}").find("parse_error"), std::string::npos);
  EXPECT_NE(parse(std::string(100000, '[') + std::string(100000, ']')).find("nested deeper"),
            std::string::npos);
  json_limits small;
  small.max_bytes = 10;
  EXPECT_NE(parse("[1, 2, 3, 4, 5]", small).find("15 bytes, more than 10"), std::string::npos);
  small = {};
  small.max_depth = 2;
  EXPECT_EQ(parse("[[1]]", small), "");
  EXPECT_NE(parse("[[[1]]]", small).find("nested deeper than 2"), std::string::npos);
}

}  // namespace
}  // namespace conveyor
