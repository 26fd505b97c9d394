// Numeric gradient check cases of the indexing and joining array ops.
#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {

void AddArrayIndexCases(std::vector<GradCase>& cases) {}

}  // namespace dflow::testing
