// Numeric gradient check cases of the detection ops: TopKV2's values (the
// only differentiable output of the family). The inputs (in [-1, 1)) get a
// scrambled offset per position, 3 apart, so the rows hold distinct values
// whatever the draw and a small step cannot reorder them, and the order
// TopKV2 finds is not the positions' order.
#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {

namespace {

// x plus offsets 3 * p for a scrambled p per position of the last dim.
Output Spread(const Scope& s, const Output& x, int64_t n) {
  std::vector<double> offsets;
  for (int64_t i = 0; i < n; ++i) offsets.push_back(3.0 * static_cast<double>((i * 7 + 3) % n));
  return ops::Add(s, x, ops::Cast(s, ops::Const(s, Tensor::FromVector(offsets)), x.dtype()));
}

}  // namespace

void AddDetectionCases(std::vector<GradCase>& c) {
  using In = std::vector<Output>;
  c.push_back({"TopKV2", {{3, 5}}, [](const Scope& s, const In& x) {
                 return ops::TopKV2(s, Spread(s, x[0], 5), 2).values;
               }});
  c.push_back({"TopKV2", {{2, 2, 4}}, [](const Scope& s, const In& x) {
                 return ops::Mul(s, ops::TopKV2(s, Spread(s, x[0], 4), 4).values, {1.0, 2.0, 3.0, 4.0});
               }});
  // Dims known only at run time: the rule computes the row offsets with ops.
  c.push_back({"TopKV2", {{2, 6}}, [](const Scope& s, const In& x) {
                 Output hidden = ops::Reshape(s, Spread(s, x[0], 6), ops::Add(s, ops::Shape(s, x[0]), 0));
                 return ops::TopKV2(s, hidden, 3).values;
               }});
}

}  // namespace dflow::testing
