// Conv2D's window geometry (ops/conv.h): attr checks, TensorFlow's SAME /
// VALID / EXPLICIT output sizes and padding, group and channel checks.
#include "ops/conv.h"

#include <algorithm>

#include "ops/explicit_paddings.h"

namespace dflow {
namespace {

// The (height, width) entries of a 4-entry NHWC list whose N and C must be 1.
void CheckNhwcList(const std::vector<int64_t>& list, const char* name) {
  if (list.size() != 4)
    Fail(Code::kInvalidArgument, name, " must have 4 entries (NHWC), got ", list.size());
  if (list[0] != 1 || list[3] != 1)
    Fail(Code::kInvalidArgument, name, " must be 1 in the batch and channel dims, got [",
         list[0], ",", list[1], ",", list[2], ",", list[3], "]");
  if (list[1] < 1 || list[2] < 1)
    Fail(Code::kInvalidArgument, name, " must be >= 1, got [", list[0], ",", list[1], ",",
         list[2], ",", list[3], "]");
}

ConvPadding ParsePadding(const std::string& padding) {
  if (padding == "SAME") return ConvPadding::kSame;
  if (padding == "VALID") return ConvPadding::kValid;
  if (padding == "EXPLICIT") return ConvPadding::kExplicit;
  Fail(Code::kInvalidArgument, "padding must be SAME, VALID or EXPLICIT, got '", padding, "'");
}

struct SpatialDim {
  int64_t out = -1, pad_before = -1;
};

// One spatial dim: effective window k' = (k-1)*dilation + 1;
//   SAME:     out = ceil(in / stride), pad_total = max((out-1)*stride + k' - in, 0),
//             pad_before = pad_total / 2
//   VALID:    out = (in - k') / stride + 1
//   EXPLICIT: out = (in + before + after - k') / stride + 1
SpatialDim Resolve(const ConvParams& p, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                   int64_t before, int64_t after, const char* dim_name) {
  if (k == 0) Fail(Code::kInvalidArgument, "the filter's ", dim_name, " is 0");
  if (in < 0 || k < 0) return {};
  // Strides, dilations and paddings are attrs a graph file may set to
  // anything: the arithmetic is checked.
  const char* dilated = "the dilated filter";
  const char* padded_input = "the padded input";
  int64_t window = CheckedAdd(CheckedMul(k - 1, dilation, dilated), 1, dilated);
  if (p.padding == ConvPadding::kSame) {
    int64_t out = in / stride + (in % stride != 0);
    int64_t reach = CheckedAdd(CheckedMul(out - 1, stride, padded_input), window, padded_input);
    return {out, std::max<int64_t>(reach - in, 0) / 2};
  }
  int64_t padded = p.padding == ConvPadding::kValid
                       ? in
                       : CheckedAdd(CheckedAdd(in, before, padded_input), after, padded_input);
  if (padded < window)
    Fail(Code::kInvalidArgument, "the filter's ", dim_name, " window ", window, " (size ", k,
         ", dilation ", dilation, ") is larger than the padded input's ", dim_name, " ", padded);
  return {(padded - window) / stride + 1, p.padding == ConvPadding::kValid ? 0 : before};
}

int64_t Dim(const Shape& s, int i) { return s.unknown_rank() ? -1 : s.dim(i); }

}  // namespace

ConvParams ParseConvParams(const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations, const std::string& padding,
                           const std::vector<int64_t>& explicit_paddings) {
  CheckNhwcList(strides, "strides");
  CheckNhwcList(dilations, "dilations");
  ConvParams p;
  p.stride_h = strides[1], p.stride_w = strides[2];
  p.dilation_h = dilations[1], p.dilation_w = dilations[2];
  p.padding = ParsePadding(padding);
  std::array<int64_t, 4> pads =
      ParseExplicitPaddings(p.padding == ConvPadding::kExplicit, explicit_paddings);
  std::copy(pads.begin(), pads.end(), p.explicit_pads);
  return p;
}

ConvParams ConvParamsOf(const Node& node) {
  return ParseConvParams(node.attr<std::vector<int64_t>>("strides"),
                         node.attr<std::vector<int64_t>>("dilations"),
                         node.attr<std::string>("padding"),
                         node.attr<std::vector<int64_t>>("explicit_paddings"));
}

ConvGeometry MakeConvGeometry(const ConvParams& p, const Shape& input, const Shape& filter) {
  if (!input.unknown_rank() && input.rank() != 4)
    Fail(Code::kInvalidArgument, "input must be rank 4 (NHWC), got ", input.ToString());
  if (!filter.unknown_rank() && filter.rank() != 4)
    Fail(Code::kInvalidArgument, "filter must be rank 4 (HWIO), got ", filter.ToString());
  ConvGeometry g;
  g.batch = Dim(input, 0), g.in_h = Dim(input, 1), g.in_w = Dim(input, 2), g.in_c = Dim(input, 3);
  g.k_h = Dim(filter, 0), g.k_w = Dim(filter, 1), g.filter_c = Dim(filter, 2);
  g.out_c = Dim(filter, 3);
  g.stride_h = p.stride_h, g.stride_w = p.stride_w;
  g.dilation_h = p.dilation_h, g.dilation_w = p.dilation_w;
  g.groups = -1;
  auto shapes = [&] { return StrCat("input ", input.ToString(), ", filter ", filter.ToString()); };
  if (g.in_c >= 0 && g.filter_c >= 0) {
    if (g.filter_c == 0 || g.in_c % g.filter_c != 0)
      Fail(Code::kInvalidArgument, "the input's channels must be a multiple of the filter's "
           "in-channels (dim 2): ", shapes());
    g.groups = g.in_c / g.filter_c;
    if (g.out_c >= 0 && g.out_c % g.groups != 0)
      Fail(Code::kInvalidArgument, "the filter's out-channels (dim 3) must be divisible by ",
           "the ", g.groups, " groups (input channels / filter in-channels): ", shapes());
  }
  try {
    SpatialDim h = Resolve(p, g.in_h, g.k_h, p.stride_h, p.dilation_h, p.explicit_pads[0],
                           p.explicit_pads[1], "height");
    SpatialDim w = Resolve(p, g.in_w, g.k_w, p.stride_w, p.dilation_w, p.explicit_pads[2],
                           p.explicit_pads[3], "width");
    g.out_h = h.out, g.pad_top = h.pad_before, g.out_w = w.out, g.pad_left = w.pad_before;
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(e.message(), ": ", shapes()));
  }
  return g;
}

void CheckOutBackprop(const ConvGeometry& g, const Shape& input, const Shape& filter,
                      const Shape& out_backprop) {
  if (out_backprop.unknown_rank()) return;
  Shape expected = g.output_shape();
  bool ok = out_backprop.rank() == 4;
  for (int i = 0; ok && i < 4; ++i)
    ok = out_backprop.dim(i) < 0 || expected.dim(i) < 0 || out_backprop.dim(i) == expected.dim(i);
  if (!ok)
    Fail(Code::kInvalidArgument, "out_backprop is ", out_backprop.ToString(), " but the Conv2D of ",
         "input ", input.ToString(), " by filter ", filter.ToString(), " gives ",
         expected.ToString());
}

ConvActivation ParseConvActivation(const std::string& name) {
  if (name.empty()) return ConvActivation::kNone;
  if (name == "Relu") return ConvActivation::kRelu;
  if (name == "Relu6") return ConvActivation::kRelu6;
  Fail(Code::kInvalidArgument, "activation must be \"\", \"Relu\" or \"Relu6\", got '", name, "'");
}

}  // namespace dflow
