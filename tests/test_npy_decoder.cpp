// The .npy decoder against NumPy's own files (written at test time on this machine), and
// against headers that are malformed or lie about their size.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/codecs/npy_decoder.hpp"
#include "core/codecs/npy_header.hpp"
#include "support/reference_files.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using bytes = std::vector<std::uint8_t>;

/// A .npy file with header dict `dict` (padded and ended by '\n' as NumPy pads it), format
/// version `major`.0, followed by `elements`.
bytes npy_file(const std::string& dict, const bytes& elements, int major = 1) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::string text = dict;
  while ((preamble + text.size() + 1) % 64 != 0) {
    text += ' ';
  }
  text += '\n';
  bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  for (std::size_t i = 0; i < preamble - 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(text.size() >> (8 * i)));
  }
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), elements.begin(), elements.end());
  return out;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

void expect_refused(const bytes& file, const std::string& why) {
  auto array = decode_npy(file);
  ASSERT_FALSE(array) << "decoded " << describe(*array);
  EXPECT_EQ(array.error().code(), errc::decode_error);
  EXPECT_NE(array.error().message().find(why), std::string::npos) << array.error().message();
}

class NumpyFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::temp_dir>();
    status_ = testing::write_references("write_npy_references.py", dir_->path());
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    if (status_ == 77) {
      GTEST_SKIP() << "NumPy is missing (Debian: python3-numpy)";
    }
    ASSERT_EQ(status_, 0) << "write_npy_references.py failed";
  }
  static bytes file(const std::string& name) { return testing::read_file(dir_->path() / name); }
  static std::vector<std::vector<std::string>> manifest() {
    return testing::read_manifest(dir_->path() / "manifest.txt");
  }

  static std::unique_ptr<testing::temp_dir> dir_;
  static int status_;
};
std::unique_ptr<testing::temp_dir> NumpyFiles::dir_;
int NumpyFiles::status_ = -1;

TEST_F(NumpyFiles, EveryDtypeOrderByteOrderRankAndVersionDecodesToNumpysElements) {
  const auto cases = manifest();
  ASSERT_GE(cases.size(), 150u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c[0]);
    auto array = decode_npy(file(c[0] + ".npy"));
    ASSERT_TRUE(array) << array.error().what();
    EXPECT_EQ(name_of(array->type), c[1]);
    ASSERT_EQ(array->rank, std::stoi(c[2]));
    for (int axis = 0; axis < array->rank; ++axis) {
      EXPECT_EQ(array->extent(axis), std::stoll(c[3 + static_cast<std::size_t>(axis)]));
    }
    const bytes expected = file(c[0] + ".raw");
    EXPECT_TRUE(
        std::equal(array->bytes.begin(), array->bytes.end(), expected.begin(), expected.end()));
  }
}

TEST_F(NumpyFiles, HeaderAloneGivesTheOffsetToDecodeTheElementsFrom) {
  for (const std::string name : {"f4_r4_f", "i8_r3_big_c", "volume_f", "u1_r0_c"}) {
    SCOPED_TRACE(name);
    const bytes whole = file(name + ".npy");
    // What a caller that maps a large volume does: read the preamble, then the header.
    auto size = npy_header_size(whole.data(), npy_preamble_bytes);
    ASSERT_TRUE(size) << size.error().what();
    auto header = parse_npy_header(whole.data(), static_cast<std::size_t>(*size), whole.size());
    ASSERT_TRUE(header) << header.error().what();
    EXPECT_EQ(header->data_offset, *size);
    EXPECT_EQ(header->data_offset + header->data_bytes, whole.size());
    auto array = npy_elements(*header, whole.data() + header->data_offset,
                              static_cast<std::size_t>(header->data_bytes));
    ASSERT_TRUE(array) << array.error().what();
    EXPECT_EQ(array->bytes, decode_npy(whole)->bytes);
    EXPECT_FALSE(npy_elements(*header, whole.data(), 3));
  }
}

TEST_F(NumpyFiles, DtypesShapesAndLayoutsConveyorDoesNotHoldAreRefusedByName) {
  expect_refused(file("refuse_f8.npy"), "descr '<f8' is not a dtype Conveyor holds");
  expect_refused(file("refuse_u2.npy"), "descr '<u2' is not a dtype Conveyor holds");
  expect_refused(file("refuse_rank5.npy"), "rank 5");
  expect_refused(file("refuse_structured.npy"), "structured");
}

TEST_F(NumpyFiles, EveryTruncationOfAFileIsAnErrorNeverAnOutOfBoundsRead) {
  const bytes whole = file("i2_r3_big_f.npy");
  for (std::size_t size = 0; size < whole.size(); ++size) {
    // A copy of exactly `size` bytes, so that AddressSanitizer sees any read past them.
    auto part = std::make_unique<std::uint8_t[]>(size + 1);
    std::memcpy(part.get(), whole.data(), size);
    EXPECT_FALSE(decode_npy(part.get(), size)) << size;
  }
}

TEST(NpyHeader, ALyingShapeNamesWhatTheHeaderSaysAndWhatFollows) {
  expect_refused(npy_file(dict("<f4", "(1, 512, 512, 512)"), bytes(1000)),
                 "header says 1x512x512x512 float32 (536870912 bytes) but 1000 bytes follow");
  expect_refused(npy_file(dict("<i2", "(3,)"), bytes(8)),
                 "header says 3 int16 (6 bytes) but 8 bytes follow");
  expect_refused(npy_file(dict("|u1", "()"), bytes{}), "(1 bytes) but 0 bytes follow");
}

TEST(NpyHeader, ShapesWhoseByteCountOverflowsAreRefused) {
  expect_refused(npy_file(dict("<f4", "(4611686018427387904, 4)"), bytes(16)),
                 "more bytes than 63 bits count");
  expect_refused(npy_file(dict("<i8", "(65536, 65536, 65536, 65536)"), bytes(16)),
                 "more bytes than 63 bits count");
  expect_refused(npy_file(dict("<f4", "(99999999999999999999,)"), bytes(16)),
                 "does not fit in 63 bits");
}

TEST(NpyHeader, AZeroExtentDoesNotHideAnOverflowOfTheOthers) {
  // 0 elements in all, but a reader in pieces multiplies the other extents (a slab of the
  // last two: 2^64 bytes here), as NumPy refuses such a shape.
  expect_refused(npy_file(dict("|u1", "(1, 0, 4294967296, 4294967296)"), bytes{}),
                 "more bytes than 63 bits count");
  expect_refused(npy_file(dict("<f4", "(0, 4611686018427387904, 2)"), bytes{}),
                 "more bytes than 63 bits count");
  auto empty = decode_npy(npy_file(dict("<f4", "(1, 0, 65536, 65536)"), bytes{}));
  ASSERT_TRUE(empty) << "an empty array whose extents fit: " << empty.error().what();
  EXPECT_EQ(empty->bytes.size(), 0u);
}

TEST(NpyHeader, MalformedDictsAreRefusedStrictly) {
  const bytes four(4);
  expect_refused(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", four),
                 "not terminated");
  expect_refused(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", four),
                 "not terminated");
  expect_refused(npy_file("{'descr': '<f4', 'fortran_order': False}", four), "no 'shape'");
  expect_refused(npy_file("{'descr': '<f4', 'shape': (1,)}", four), "no 'fortran_order'");
  expect_refused(npy_file(dict("<f4", "(1,)") + "x", four), "text after the closing");
  expect_refused(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four),
                 "unexpected key 'x'");
  expect_refused(
      npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", four),
      "'descr' appears twice");
  expect_refused(npy_file(dict("<f4", "(1)"), four), "NumPy writes (n,)");
  expect_refused(npy_file(dict("<f4", "[1]"), four), "shape is not a tuple");
  expect_refused(npy_file(dict("<f4", "(-1,)"), four), "non-negative integers");
  expect_refused(npy_file(dict("<f4", "(1 2)"), four), "expected ',' or ')'");
  expect_refused(npy_file(dict("<f4", "(01,)"), four), "leading zero");
  expect_refused(npy_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", four),
                 "not True or False");
  expect_refused(npy_file("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", four),
                 "expected ',' or '}' after the value of 'descr'");
  expect_refused(npy_file("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", four),
                 "expected ':' after 'descr'");
  expect_refused(npy_file("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,)}", four),
                 "structured");
  expect_refused(npy_file("['descr', '<f4']", four), "not a dict");
  expect_refused(npy_file("{'de\\x': '<f4', 'fortran_order': False, 'shape': (1,)}", four),
                 "escapes");
}

TEST(NpyHeader, DescrsMustBeOnesNumpyWritesForTypesConveyorHolds) {
  expect_refused(npy_file(dict("<f8", "(1,)"), bytes(8)),
                 "descr '<f8' is not a dtype Conveyor holds");
  expect_refused(npy_file(dict("f4", "(1,)"), bytes(4)), "descr 'f4' is not a dtype");
  expect_refused(npy_file(dict("|i4", "(1,)"), bytes(4)), "byte order '|'");
  expect_refused(npy_file(dict("=i4", "(1,)"), bytes(4)), "byte order '='");
  expect_refused(npy_file(dict("<U4", "(1,)"), bytes(16)), "is not a dtype Conveyor holds");
  expect_refused(npy_file(dict("|i1", "(1,)"), bytes(1)), "is not a dtype Conveyor holds");
}

TEST(NpyHeader, PreamblesThatAreNotNumpysAreRefused) {
  bytes file = npy_file(dict("<f4", "(1,)"), bytes(4));
  expect_refused(bytes{}, "no \\x93NUMPY magic");
  expect_refused(bytes(file.begin(), file.begin() + 7), "ends inside the preamble");
  bytes wrong_magic = file;
  wrong_magic[1] = 'X';
  expect_refused(wrong_magic, "no \\x93NUMPY magic");
  bytes version4 = file;
  version4[6] = 4;
  expect_refused(version4, "version 4.0 is not one NumPy writes");
  bytes minor = file;
  minor[7] = 1;
  expect_refused(minor, "version 1.1");
  bytes long_header = file;
  long_header[8] = 0xff;
  long_header[9] = 0xff;
  expect_refused(long_header, "header needs 65545 bytes but");
  bytes huge = npy_file(dict("<f4", "(1,)"), bytes(4), 2);
  huge[11] = 0x7f;
  expect_refused(huge, "longer than 65536");
}

TEST(NpyHeader, ParsesHeadersOtherWritersProduce) {
  // Python 2's NumPy wrote long extents as 3L; double quotes and no trailing comma are valid
  // Python literals; keys come in any order.
  auto array = decode_npy(
      npy_file("{\"shape\": (2L, 3L), 'fortran_order': False, 'descr': '<i2'}", bytes(12, 1)));
  ASSERT_TRUE(array) << array.error().what();
  EXPECT_EQ(describe(*array), "int16 [2, 3]");
}

TEST(NpyHeader, DescribeNamesShapeTypeAndLayout) {
  bytes file = npy_file(dict(">f2", "(4, 5)", true), bytes(40));
  auto header = parse_npy_header(file.data(), file.size(), file.size());
  ASSERT_TRUE(header) << header.error().what();
  EXPECT_EQ(header->describe(), "4x5 float16 big-endian Fortran-order");
  EXPECT_TRUE(header->big_endian);
  EXPECT_TRUE(header->fortran_order);
}

TEST(NpyDecoder, BoolsDecodeToZeroOrOneBytes) {
  auto array = decode_npy(npy_file(dict("|b1", "(4,)"), bytes{0, 1, 2, 255}));
  ASSERT_TRUE(array) << array.error().what();
  EXPECT_EQ(array->type, dtype::uint8);
  EXPECT_EQ(array->bytes, (tensor_bytes{0, 1, 1, 1}));
}

TEST(NpyDecoder, FortranOrderWithAnEmptyAxisDecodesToAnEmptyArray) {
  auto array = decode_npy(npy_file(dict("<f4", "(4, 0, 3)", true), bytes{}));
  ASSERT_TRUE(array) << array.error().what();
  EXPECT_EQ(describe(*array), "float32 [4, 0, 3]");
  EXPECT_TRUE(array->bytes.empty());
}

TEST(NpyDecoder, FortranOrderIsTransposedIntoCOrder) {
  // 2 x 3 int32, column-major: columns (0, 3), (1, 4), (2, 5).
  bytes elements;
  for (std::uint8_t v : {0, 3, 1, 4, 2, 5}) {
    elements.insert(elements.end(), {v, 0, 0, 0});
  }
  auto array = decode_npy(npy_file(dict("<i4", "(2, 3)", true), elements));
  ASSERT_TRUE(array) << array.error().what();
  const auto* v = array->data<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(v, v + 6), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace conveyor
