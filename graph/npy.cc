// The .npy format: the magic "\x93NUMPY", a version byte pair, the header
// length (uint16 in 1.0, uint32 in 2.0/3.0, little-endian), then an ASCII
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}
// padded with spaces and a newline so the data starts at a multiple of 64,
// then the raw elements.
#include "graph/npy.h"

#include <array>
#include <cstring>
#include <limits>
#include <optional>

#include "graph/file.h"

namespace dflow {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr int kMaxDepth = 16;  // nesting allowed in a header literal

// A Python literal from a header: only what numpy writes, plus the structured
// descr lists it may write for dtypes dflow rejects with a clear message.
struct PyValue {
  enum Kind { kString, kInt, kBool, kNone, kTuple, kList, kDict } kind = kNone;
  std::string text;               // kString
  int64_t number = 0;             // kInt
  bool flag = false;              // kBool
  std::vector<PyValue> items;     // kTuple, kList; kDict values
  std::vector<std::string> keys;  // kDict keys (string keys only)
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  PyValue ParseAll() {
    PyValue value = Value(0);
    SkipSpace();
    if (pos_ != text_.size()) Bad("unexpected text after the dict");
    return value;
  }

 private:
  [[noreturn]] void Bad(std::string_view what) const {
    std::string shown(text_.substr(0, 200));
    while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\n')) shown.pop_back();
    Fail(Code::kDataLoss, "'", source_, "': malformed .npy header: ", what, " at offset ", pos_,
         " in \"", shown, text_.size() > 200 ? "..." : "", "\"");
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void Expect(char c) {
    if (!Eat(c)) Bad(StrCat("expected '", c, "'"));
  }

  PyValue Value(int depth) {
    if (depth > kMaxDepth) Bad("nesting too deep");
    SkipSpace();
    if (pos_ >= text_.size()) Bad("unexpected end");
    char c = text_[pos_];
    if (c == '{') return Dict(depth);
    if (c == '(' || c == '[') return Sequence(depth);
    if (c == '\'' || c == '"') return String();
    if (c == '-' || (c >= '0' && c <= '9')) return Int();
    for (auto [word, kind, flag] :
         {std::tuple{"True", PyValue::kBool, true}, std::tuple{"False", PyValue::kBool, false},
          std::tuple{"None", PyValue::kNone, false}}) {
      if (text_.substr(pos_, std::strlen(word)) == word) {
        pos_ += std::strlen(word);
        PyValue v;
        v.kind = kind;
        v.flag = flag;
        return v;
      }
    }
    Bad("unexpected character");
  }

  PyValue Dict(int depth) {
    PyValue dict;
    dict.kind = PyValue::kDict;
    Expect('{');
    while (!Eat('}')) {
      SkipSpace();
      PyValue key = Value(depth + 1);
      if (key.kind != PyValue::kString) Bad("dict key is not a string");
      Expect(':');
      dict.keys.push_back(std::move(key.text));
      dict.items.push_back(Value(depth + 1));
      if (!Eat(',')) {
        Expect('}');
        break;
      }
    }
    return dict;
  }

  PyValue Sequence(int depth) {
    PyValue seq;
    char close = text_[pos_] == '(' ? ')' : ']';
    seq.kind = close == ')' ? PyValue::kTuple : PyValue::kList;
    ++pos_;
    while (!Eat(close)) {
      seq.items.push_back(Value(depth + 1));
      if (!Eat(',')) {
        Expect(close);
        break;
      }
    }
    return seq;
  }

  PyValue String() {
    char quote = text_[pos_++];
    PyValue v;
    v.kind = PyValue::kString;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      v.text += text_[pos_++];
    }
    if (pos_ >= text_.size()) Bad("unterminated string");
    ++pos_;
    return v;
  }

  PyValue Int() {
    bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    size_t start = pos_;
    PyValue v;
    v.kind = PyValue::kInt;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_++] - '0';
      if (v.number > (std::numeric_limits<int64_t>::max() - digit) / 10) Bad("integer too large");
      v.number = v.number * 10 + digit;
    }
    if (pos_ == start) Bad("expected digits");
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long literals
    if (negative) v.number = -v.number;
    return v;
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

struct DescrEntry {
  std::string_view code;  // descr without its byte-order character
  DType dtype;
  char order;  // the byte-order character numpy writes
};
constexpr std::array<DescrEntry, 8> kDescrs = {{
    {"f4", DType::kFloat32, '<'},
    {"f8", DType::kFloat64, '<'},
    {"f2", DType::kFloat16, '<'},
    {"i1", DType::kInt8, '|'},
    {"u1", DType::kUInt8, '|'},
    {"i4", DType::kInt32, '<'},
    {"i8", DType::kInt64, '<'},
    {"b1", DType::kBool, '|'},
}};

DType DTypeFromDescr(std::string_view descr, std::string_view source) {
  char order = '|';
  std::string_view code = descr;
  if (!code.empty() && std::strchr("<>|=", code[0])) {
    order = code[0];
    code.remove_prefix(1);
  }
  for (const DescrEntry& entry : kDescrs) {
    if (entry.code != code) continue;
    if (order == '>' && DTypeSize(entry.dtype) > 1)
      Fail(Code::kInvalidArgument, "'", source, "': big-endian data ('", descr,
           "') is not supported; save it little-endian, e.g. arr.astype('<", code, "')");
    return entry.dtype;
  }
  Fail(Code::kInvalidArgument, "'", source, "': unsupported dtype '", descr,
       "' (dflow reads <f2, <f4, <f8, |i1, |u1, <i4, <i8 and |b1)");
}

const PyValue& DictEntry(const PyValue& dict, std::string_view key, std::string_view source) {
  for (size_t i = 0; i < dict.keys.size(); ++i)
    if (dict.keys[i] == key) return dict.items[i];
  Fail(Code::kDataLoss, "'", source, "': .npy header has no '", key, "' key");
}

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
};

NpyHeader ReadHeader(std::string_view text, std::string_view source) {
  PyValue dict = HeaderParser(text, source).ParseAll();
  if (dict.kind != PyValue::kDict)
    Fail(Code::kDataLoss, "'", source, "': .npy header is not a dict");
  const PyValue& descr = DictEntry(dict, "descr", source);
  const PyValue& fortran = DictEntry(dict, "fortran_order", source);
  const PyValue& shape = DictEntry(dict, "shape", source);
  if (descr.kind != PyValue::kString)
    Fail(Code::kInvalidArgument, "'", source,
         "': structured dtypes (a 'descr' list) are not supported");
  if (fortran.kind != PyValue::kBool)
    Fail(Code::kDataLoss, "'", source, "': 'fortran_order' must be True or False");
  if (shape.kind != PyValue::kTuple && shape.kind != PyValue::kList)
    Fail(Code::kDataLoss, "'", source, "': 'shape' must be a tuple of integers");
  NpyHeader header{DTypeFromDescr(descr.text, source), {}};
  int big_dims = 0;
  for (const PyValue& dim : shape.items) {
    if (dim.kind != PyValue::kInt)
      Fail(Code::kDataLoss, "'", source, "': 'shape' must be a tuple of integers");
    if (dim.number < 0)
      Fail(Code::kDataLoss, "'", source, "': negative dimension ", dim.number, " in shape");
    header.shape.push_back(dim.number);
    big_dims += dim.number > 1;
  }
  // With at most one dimension above 1, Fortran and C order lay out the same bytes.
  if (fortran.flag && big_dims > 1)
    Fail(Code::kInvalidArgument, "'", source,
         "': Fortran-ordered arrays are not supported; save np.ascontiguousarray(arr)");
  return header;
}

uint32_t ReadLittleEndian(std::string_view bytes, size_t offset, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

}  // namespace

Tensor ParseNpy(std::string_view bytes, std::string_view source) {
  if (bytes.substr(0, 6) != kMagic)
    Fail(Code::kDataLoss, "'", source, "': not a .npy file (bad magic)");
  if (bytes.size() < 8) Fail(Code::kDataLoss, "'", source, "': truncated .npy header");
  int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    Fail(Code::kDataLoss, "'", source, "': unsupported .npy version ", major, ".", minor,
         " (dflow reads 1.0, 2.0 and 3.0)");
  int width = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + static_cast<size_t>(width))
    Fail(Code::kDataLoss, "'", source, "': truncated .npy header");
  size_t header_len = ReadLittleEndian(bytes, 8, width);
  size_t data_start = 8 + width + header_len;
  if (bytes.size() < data_start)
    Fail(Code::kDataLoss, "'", source, "': truncated .npy header (", header_len,
         " header bytes announced, ", bytes.size() - 8 - width, " present)");
  NpyHeader header = ReadHeader(bytes.substr(8 + width, header_len), source);

  Shape shape(header.shape);
  try {
    CheckShapeSize(shape, static_cast<int64_t>(DTypeSize(header.dtype)));
  } catch (const Error& e) {
    Fail(Code::kDataLoss, "'", source, "': ", e.message());
  }
  uint64_t needed = static_cast<uint64_t>(shape.NumElements()) * DTypeSize(header.dtype);
  uint64_t present = bytes.size() - data_start;
  if (present < needed)
    Fail(Code::kDataLoss, "'", source, "': data is truncated: ", DTypeName(header.dtype),
         shape.ToString(), " needs ", needed, " bytes, the file has ", present);
  if (present > needed)
    Fail(Code::kDataLoss, "'", source, "': ", present - needed, " unexpected bytes after the ",
         DTypeName(header.dtype), shape.ToString(), " data");

  Tensor tensor(header.dtype, shape);
  if (needed > 0) std::memcpy(tensor.raw_data(), bytes.data() + data_start, needed);
  if (header.dtype == DType::kBool) {
    // A C++ bool must hold 0 or 1; numpy treats any nonzero byte as True.
    auto* raw = static_cast<unsigned char*>(tensor.raw_data());
    for (int64_t i = 0; i < tensor.NumElements(); ++i) raw[i] = raw[i] != 0;
  }
  return tensor;
}

std::string SerializeNpy(const Tensor& tensor) {
  DFLOW_REQUIRE(tensor.valid(), "SerializeNpy: empty tensor handle");
  std::string descr;
  for (const DescrEntry& entry : kDescrs)
    if (entry.dtype == tensor.dtype()) descr = StrCat(entry.order, entry.code);
  if (descr.empty()) Fail(Code::kUnimplemented, "no .npy dtype for ", DTypeName(tensor.dtype()));
  std::string dims;
  for (int64_t dim : tensor.shape().dims()) dims += StrCat(dim, ", ");
  if (tensor.rank() > 1) dims.resize(dims.size() - 2);  // (2, 3); a 1-d shape keeps "(3,)"
  if (tensor.rank() == 1) dims.pop_back();
  std::string header =
      StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces so magic + version + length + header ends on a multiple
  // of 64 with a newline; version 2.0 has a 4-byte length.
  int width = header.size() + 1 + 10 <= 65535 ? 2 : 4;
  size_t total = 8 + width + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::string out(kMagic);
  out += static_cast<char>(width == 2 ? 1 : 2);
  out += '\0';
  for (int i = 0; i < width; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  return out;
}

Tensor ReadNpy(const std::string& path) { return ParseNpy(ReadFileToString(path), path); }

void WriteNpy(const std::string& path, const Tensor& tensor) {
  WriteFileAtomic(path, SerializeNpy(tensor));
}

}  // namespace dflow
