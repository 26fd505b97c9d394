#include "graph/attr.h"

#include <sstream>

namespace dflow {

std::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kString: return "string";
    case AttrType::kDType: return "dtype";
    case AttrType::kShape: return "shape";
    case AttrType::kTensor: return "tensor";
    case AttrType::kIntList: return "list(int)";
    case AttrType::kFloatList: return "list(float)";
    case AttrType::kBoolList: return "list(bool)";
    case AttrType::kStringList: return "list(string)";
    case AttrType::kDTypeList: return "list(dtype)";
    case AttrType::kShapeList: return "list(shape)";
    case AttrType::kTensorList: return "list(tensor)";
  }
  return "?";
}

namespace {

void Render(std::ostream& out, int64_t v) { out << v; }
void Render(std::ostream& out, double v) { out << v; }
void Render(std::ostream& out, bool v) { out << (v ? "true" : "false"); }
void Render(std::ostream& out, const std::string& v) { out << '"' << v << '"'; }
void Render(std::ostream& out, DType v) { out << DTypeName(v); }
void Render(std::ostream& out, const Shape& v) { out << v.ToString(); }
void Render(std::ostream& out, const Tensor& v) { out << v.DebugString(4); }
template <typename T>
void Render(std::ostream& out, const std::vector<T>& values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out << ", ";
    Render(out, static_cast<T>(values[i]));
  }
  out << ']';
}

bool Same(const Tensor& a, const Tensor& b) { return a.Equals(b); }
template <typename T>
bool Same(const T& a, const T& b) { return a == b; }
bool Same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].Equals(b[i])) return false;
  return true;
}

}  // namespace

std::string AttrToString(const AttrValue& value) {
  std::ostringstream out;
  std::visit([&](const auto& v) { Render(out, v); }, value);
  return out.str();
}

bool AttrEquals(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& va) {
        using V = std::decay_t<decltype(va)>;
        return Same(va, std::get<V>(b));
      },
      a);
}

}  // namespace dflow
