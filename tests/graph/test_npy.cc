// .npy reading and writing: round trips of every dtype, hand-made headers of
// each version, every malformed-file error, and files exchanged with numpy.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "graph/file.h"
#include "graph/npy.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::TensorBytes;
using testing::ExpectError;

namespace {

// A .npy file from a header dict and raw data, in the given format version.
std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  int width = major == 1 ? 2 : 4;
  while ((8 + width + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < width; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::filesystem::path TempDir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("dflow_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("npy round trip of every dtype and shape", "[io]") {
  for (DType dtype : AllDTypes()) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5}, Shape{2, 3, 4}, Shape{2, 0, 3}}) {
      Tensor t = testing::RandomTensor(dtype, shape, 7, dtype == DType::kUInt8 ? 0 : -100, 100);
      std::string bytes = SerializeNpy(t);
      INFO(DTypeName(dtype) << shape.ToString());
      REQUIRE(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
      size_t header_len =
          static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
      CHECK((10 + header_len) % 64 == 0);  // numpy aligns the data to 64 bytes
      CHECK(bytes[10 + header_len - 1] == '\n');
      Tensor back = ParseNpy(bytes);
      testing::ExpectEqual(back, t);
      CHECK(TensorBytes(back) == TensorBytes(t));  // bit-exact, float16 included
    }
  }
}

TEST_CASE("npy header text matches numpy's", "[io]") {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::string bytes = SerializeNpy(t);
  CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") == 10);
  CHECK(SerializeNpy(Tensor::FromVector<int8_t>({1, 2, 3})).find("'descr': '|i1'") !=
        std::string::npos);
  CHECK(SerializeNpy(Tensor::FromVector<int8_t>({1, 2, 3})).find("'shape': (3,)") !=
        std::string::npos);
  CHECK(SerializeNpy(Tensor::Scalar<bool>(true))
            .find("'descr': '|b1', 'fortran_order': False, 'shape': ()") != std::string::npos);
}

TEST_CASE("npy reads versions 2.0 and 3.0 and numpy's byte-order spellings", "[io]") {
  Tensor t = Tensor::FromVector<int32_t>({1, -2, 3, 4}, {2, 2});
  for (int major : {1, 2, 3}) {
    for (std::string descr : {"<i4", "=i4", "|i4", "i4"}) {
      std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 2), }";
      testing::ExpectEqual(ParseNpy(MakeNpy(dict, TensorBytes(t), major)), t);
    }
  }
  // Double quotes, no trailing comma, other key order, Python 2 longs.
  std::string dict = "{\"shape\": (2L, 2L), \"fortran_order\": False, \"descr\": \"<i4\"}";
  testing::ExpectEqual(ParseNpy(MakeNpy(dict, TensorBytes(t))), t);
  // Single-byte types may carry any byte-order character.
  Tensor u = Tensor::FromVector<uint8_t>({0, 255});
  testing::ExpectEqual(
      ParseNpy(MakeNpy("{'descr': '>u1', 'fortran_order': False, 'shape': (2,)}", TensorBytes(u))), u);
  // Fortran order is the same layout when at most one dimension exceeds 1.
  Tensor col = Tensor::FromVector<double>({1.5, 2.5, 3.5}, {3, 1});
  testing::ExpectEqual(
      ParseNpy(MakeNpy("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 1)}", TensorBytes(col))),
      col);
}

TEST_CASE("npy bool bytes other than 0 and 1 read as true", "[io]") {
  std::string data = {0, 1, 2, static_cast<char>(255)};
  Tensor t = ParseNpy(MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (4,)}", data));
  CHECK(t.ToVector<bool>() == std::vector<bool>{false, true, true, true});
  CHECK(static_cast<const unsigned char*>(t.raw_data())[2] == 1);
}

TEST_CASE("npy malformed files are clear errors", "[io]") {
  const std::string f4 = "'descr': '<f4', 'fortran_order': False";
  const std::string data6(24, '\0');
  auto bad = [](const std::string& bytes, Code code, const std::string& substring) {
    INFO(substring);
    ExpectError([&] { ParseNpy(bytes, "x.npy"); }, code, substring);
    ExpectError([&] { ParseNpy(bytes, "x.npy"); }, code, "'x.npy'");
  };
  bad("", Code::kDataLoss, "bad magic");
  bad("\x93NUMPY", Code::kDataLoss, "truncated .npy header");
  bad("PK\x03\x04 not numpy at all", Code::kDataLoss, "bad magic");
  bad(std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '), Code::kDataLoss,
      "version 4.0");
  bad(std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 18), Code::kDataLoss,
      "truncated .npy header");
  bad(std::string("\x93NUMPY\x02\x00\x01", 9), Code::kDataLoss, "truncated .npy header");
  bad(MakeNpy("[1, 2, 3]", ""), Code::kDataLoss, "header is not a dict");
  bad(MakeNpy("{'descr': '<f4', 'shape': (2, 3)}", data6), Code::kDataLoss,
      "no 'fortran_order' key");
  bad(MakeNpy("{'fortran_order': False, 'shape': (2, 3)}", data6), Code::kDataLoss,
      "no 'descr' key");
  bad(MakeNpy("{" + f4 + "}", data6), Code::kDataLoss, "no 'shape' key");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, 3)", data6), Code::kDataLoss, "malformed .npy header");
  bad(MakeNpy("{'descr: '<f4'}", data6), Code::kDataLoss, "malformed .npy header");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, 3)} junk", data6), Code::kDataLoss, "unexpected text");
  bad(MakeNpy("{" + f4 + ", 'shape': " + std::string(100, '(') + "}", data6), Code::kDataLoss,
      "nesting too deep");
  bad(MakeNpy("{" + f4 + ", 'shape': (99999999999999999999,)}", ""), Code::kDataLoss,
      "integer too large");
  bad(MakeNpy("{" + f4 + ", 'shape': '2x3'}", data6), Code::kDataLoss, "'shape' must be a tuple");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, 'a')}", data6), Code::kDataLoss,
      "'shape' must be a tuple");
  bad(MakeNpy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", data6), Code::kDataLoss,
      "'fortran_order' must be True or False");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, -3)}", data6), Code::kDataLoss, "negative dimension -3");
  bad(MakeNpy("{" + f4 + ", 'shape': (4294967296, 4294967296, 4294967296)}", data6),
      Code::kDataLoss, "too many elements");
  bad(MakeNpy("{" + f4 + ", 'shape': (4611686018427387904,)}", data6), Code::kDataLoss,
      "too many elements");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, 3)}", std::string(23, '\0')), Code::kDataLoss,
      "data is truncated: float32[2,3] needs 24 bytes, the file has 23");
  bad(MakeNpy("{" + f4 + ", 'shape': (2, 3)}", std::string(25, '\0')), Code::kDataLoss,
      "1 unexpected bytes");
  bad(MakeNpy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,)}", data6),
      Code::kInvalidArgument, "unsupported dtype '<i2'");
  bad(MakeNpy("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}", data6),
      Code::kInvalidArgument, "unsupported dtype '|O'");
  bad(MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", data6),
      Code::kInvalidArgument, "structured dtypes");
  bad(MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}", data6),
      Code::kInvalidArgument, "big-endian");
  bad(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", data6),
      Code::kInvalidArgument, "Fortran-ordered");
}

TEST_CASE("npy every truncation of a valid file is an error, never a crash", "[io]") {
  std::string bytes = SerializeNpy(Tensor::FromVector<double>({1, 2, 3}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    CHECK_THROWS_AS(ParseNpy(std::string_view(bytes).substr(0, n)), Error);
  }
}

TEST_CASE("npy files on disk", "[io]") {
  auto dir = TempDir("npy");
  std::string path = (dir / "t.npy").string();
  Tensor t = Tensor::FromVector<int64_t>({1, -2, 1LL << 40}, {3, 1});
  WriteNpy(path, t);
  testing::ExpectEqual(ReadNpy(path), t);
  CHECK(!std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  ExpectError([&] { ReadNpy((dir / "missing.npy").string()); }, Code::kNotFound, "missing.npy");
  ExpectError([&] { ReadNpy(dir.string()); }, Code::kInvalidArgument, "is a directory");
  ExpectError([&] { WriteNpy((dir / "no" / "such" / "dir.npy").string(), t); }, Code::kNotFound,
              "dir.npy");
  std::filesystem::remove_all(dir);
}

namespace {

// A python3 that can import numpy, or "" when there is none.
std::string FindNumpyPython() {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    std::string command = std::string(python) + " -c 'import numpy' > /dev/null 2>&1";
    if (std::system(command.c_str()) == 0) return python;
  }
  return "";
}

int RunPython(const std::string& python, const std::filesystem::path& dir,
              const std::string& script) {
  std::string script_path = (dir / "script.py").string();
  std::ofstream(script_path) << script;
  return std::system((python + " " + script_path).c_str());
}

}  // namespace

TEST_CASE("npy files exchanged with numpy", "[io]") {
  std::string python = FindNumpyPython();
  if (python.empty()) {
    WARN("skipped: no python3 with numpy (apt-get install python3-numpy)");
    return;
  }
  auto dir = TempDir("npy_numpy");
  // numpy writes arange(6) reshaped to (2, 3) in each dtype, in versions 1.0, 2.0 and 3.0.
  std::string d = dir.string();
  REQUIRE(
      RunPython(python, dir,
                "import numpy as np\n"
                "for code in ['f2', 'f4', 'f8', 'i1', 'u1', 'i4', 'i8', 'b1']:\n"
                "    a = (np.arange(6) % 2 == 1) if code == 'b1' else np.arange(6).astype(code)\n"
                "    a = a.reshape(2, 3)\n"
                "    np.save('" +
                    d +
                    "/np_' + code + '.npy', a)\n"
                    "    for v in [(2, 0), (3, 0)]:\n"
                    "        with open('" +
                    d +
                    "/np_%s_v%d.npy' % (code, v[0]), 'wb') as f:\n"
                    "            np.lib.format.write_array(f, a, version=v)\n"
                    "np.save('" +
                    d +
                    "/np_big.npy', np.arange(6, dtype='>f4'))\n"
                    "np.save('" +
                    d +
                    "/np_fortran.npy', np.asfortranarray(np.ones((2, 3))))\n"
                    "np.save('" +
                    d + "/np_scalar.npy', np.float64(2.5))\n") == 0);
  for (std::string code : {"f2", "f4", "f8", "i1", "u1", "i4", "i8", "b1"}) {
    for (std::string suffix : {"", "_v2", "_v3"}) {
      std::string path = d + "/np_" + code + suffix + ".npy";
      INFO(path);
      Tensor t = ReadNpy(path);
      REQUIRE(t.shape() == Shape({2, 3}));
      for (int i = 0; i < 6; ++i) CHECK(ReadAsDouble(t, i) == (code == "b1" ? i % 2 : i));
    }
  }
  CHECK(ReadNpy(d + "/np_scalar.npy").scalar<double>() == 2.5);
  ExpectError([&] { ReadNpy(d + "/np_big.npy"); }, Code::kInvalidArgument, "big-endian");
  ExpectError([&] { ReadNpy(d + "/np_fortran.npy"); }, Code::kInvalidArgument, "Fortran");

  // dflow writes; numpy reads and checks dtype, shape and values.
  for (DType dtype : AllDTypes()) {
    Tensor t = testing::RandomTensor(dtype, {3, 4}, 11, dtype == DType::kUInt8 ? 0 : -50, 50);
    WriteNpy(d + "/dflow_" + std::string(DTypeName(dtype)) + ".npy", t);
    WriteNpy(d + "/dflow_" + std::string(DTypeName(dtype)) + ".raw",
             Tensor::FromVector<double>([&] {
               std::vector<double> v;
               for (int i = 0; i < 12; ++i) v.push_back(ReadAsDouble(t, i));
               return v;
             }()));
  }
  CHECK(RunPython(python, dir,
                  "import numpy as np, sys\n"
                  "names = {'float32': 'f4', 'float64': 'f8', 'float16': 'f2', 'int8': 'i1',\n"
                  "         'uint8': 'u1', 'int32': 'i4', 'int64': 'i8', 'bool': '?'}\n"
                  "for name, code in names.items():\n"
                  "    a = np.load('" +
                      d +
                      "/dflow_' + name + '.npy')\n"
                      "    ref = np.load('" +
                      d +
                      "/dflow_' + name + '.raw', allow_pickle=False)\n"
                      "    assert a.dtype == np.dtype(code), (name, a.dtype)\n"
                      "    assert a.shape == (3, 4), (name, a.shape)\n"
                      "    assert (a.astype('f8').ravel() == ref).all(), name\n") == 0);
  std::filesystem::remove_all(dir);
}
