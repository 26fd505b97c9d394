// Numeric gradient check cases of the convolution ops (see grad_cases.h):
// Conv2D in several geometries (groups, depthwise, strides, dilations,
// EXPLICIT padding) and both backprop ops, each differentiated with respect
// to both of its float inputs. Tensors stay small: the checker runs the
// graph once per input element.
#include "ops/ops.h"
#include "tests/autodiff/grad_cases.h"

namespace dflow::testing {

using In = std::vector<Output>;

void AddConvCases(std::vector<GradCase>& c) {
  auto conv = [](ops::Conv2DAttrs a) {
    return [a](const Scope& s, const In& x) { return ops::Conv2D(s, x[0], x[1], a); };
  };
  c.push_back({"Conv2D", {{1, 5, 5, 2}, {3, 3, 2, 3}}, conv({})});
  c.push_back({"Conv2D", {{2, 6, 7, 4}, {3, 3, 2, 4}},  // 2 groups, stride 2, VALID
               conv({.strides = {1, 2, 2, 1}, .padding = "VALID"})});
  c.push_back({"Conv2D", {{1, 6, 5, 3}, {3, 3, 1, 6}},  // depthwise, multiplier 2, dilation 2
               conv({.dilations = {1, 2, 2, 1}})});
  c.push_back({"Conv2D", {{2, 5, 6, 2}, {3, 2, 2, 3}},  // EXPLICIT, strides 2 and 1
               conv({.strides = {1, 2, 1, 1}, .padding = "EXPLICIT",
                     .explicit_paddings = {0, 0, 1, 2, 0, 1, 0, 0}})});
  c.push_back({"Conv2D", {{1, 4, 4, 3}, {1, 1, 3, 2}}, conv({})});  // pointwise GEMM
  // MobileNet's depthwise layers: multiplier 1 with 16 channels (the
  // vectorised kernels), stride 2 and 1, one pixel of padding on every side.
  ops::Conv2DAttrs padded_one{.padding = "EXPLICIT", .explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0}};
  c.push_back({"Conv2D", {{2, 7, 7, 16}, {3, 3, 1, 16}}, conv(padded_one)});
  padded_one.strides = {1, 2, 2, 1};
  c.push_back({"Conv2D", {{2, 7, 7, 16}, {3, 3, 1, 16}}, conv(padded_one)});
  // Backprop ops: the sizes are Consts; dy has the conv's output shape.
  ops::Conv2DAttrs strided{.strides = {1, 2, 2, 1}};
  c.push_back({"Conv2DBackpropInput", {{3, 3, 2, 3}, {1, 3, 3, 3}},
               [strided](const Scope& s, const In& x) {
                 return ops::Conv2DBackpropInput(s, {1, 5, 6, 2}, x[0], x[1], strided);
               }});
  c.push_back({"Conv2DBackpropInput", {{3, 3, 1, 4}, {2, 5, 5, 4}},  // depthwise
               [](const Scope& s, const In& x) {
                 return ops::Conv2DBackpropInput(s, {2, 5, 5, 4}, x[0], x[1]);
               }});
  c.push_back({"Conv2DBackpropFilter", {{1, 5, 6, 2}, {1, 3, 3, 3}},
               [strided](const Scope& s, const In& x) {
                 return ops::Conv2DBackpropFilter(s, x[0], {3, 3, 2, 3}, x[1], strided);
               }});
  c.push_back({"Conv2DBackpropFilter", {{1, 6, 6, 4}, {1, 4, 4, 4}},  // 2 groups, dilation 2
               [](const Scope& s, const In& x) {
                 return ops::Conv2DBackpropFilter(s, x[0], {2, 2, 2, 4}, x[1],
                                                  {.dilations = {1, 2, 2, 1}, .padding = "VALID"});
               }});
}

}  // namespace dflow::testing
