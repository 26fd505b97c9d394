// Numeric gradient check cases of the detection ops: TopKV2's values (the
// only differentiable output of the family), with rows of distinct values so
// a small step does not reorder them.
#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {

void AddDetectionCases(std::vector<GradCase>& c) {
  using In = std::vector<Output>;
  c.push_back({"TopKV2", {{3, 5}}, [](const Scope& s, const In& x) {
                 return ops::TopKV2(s, x[0], 2).values;
               }});
  c.push_back({"TopKV2", {{2, 2, 4}}, [](const Scope& s, const In& x) {
                 return ops::Mul(s, ops::TopKV2(s, x[0], 4).values, {1.0, 2.0, 3.0, 4.0});
               }});
  // Dims known only at run time: the rule computes the row offsets with ops.
  c.push_back({"TopKV2", {{2, 6}}, [](const Scope& s, const In& x) {
                 Output hidden = ops::Reshape(s, x[0], ops::Add(s, ops::Shape(s, x[0]), 0));
                 return ops::TopKV2(s, hidden, 3).values;
               }});
}

}  // namespace dflow::testing
