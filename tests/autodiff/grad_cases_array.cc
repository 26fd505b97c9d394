// Numeric gradient check cases of the indexing and joining array ops. Each
// op is checked with shapes known while building (the rules' constant path)
// and, through Hidden() and RunTime(), with shapes or index values known only
// when the session runs (the path that computes shapes with ops).
#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {
namespace {

using In = std::vector<Output>;

// x with its dims unknown while building (the rank stays known): an Add is
// not folded until the session runs, so Reshape cannot see the new shape.
Output Hidden(const Scope& s, const Output& x) {
  return ops::Reshape(s, x, ops::Add(s, ops::Shape(s, x), 0));
}

// An int constant whose value is known only at run time.
Output RunTime(const Scope& s, const Tensor& value) {
  return ops::Add(s, ops::Const(s, value), 0);
}

Tensor I32(std::vector<int32_t> v, Shape shape = Shape::Unknown()) {
  return shape.unknown_rank() ? Tensor::FromVector(v) : Tensor::FromVector(v, shape);
}

void AddTransposeConcatSplit(std::vector<GradCase>& c) {
  c.push_back({"Transpose", {{2, 3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Transpose(s, x[0], {2, 0, 1});
               }});
  c.push_back({"Transpose", {{2, 3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Transpose(s, Hidden(s, x[0]), Tensor::FromVector<int64_t>({1, 2, 0}));
               }});
  c.push_back({"Transpose", {{2, 3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Transpose(s, x[0], RunTime(s, I32({2, 0, 1})));
               }});
  c.push_back({"ConcatV2", {{2, 3}, {2, 1}, {2, 2}}, [](const Scope& s, const In& x) {
                 return ops::Concat(s, {x[0], x[1], x[2]}, 1);
               }});
  c.push_back({"ConcatV2", {{2, 1, 2}, {2, 1, 3}}, [](const Scope& s, const In& x) {
                 return ops::Concat(s, {x[0], ops::Square(s, x[1])}, -1);
               }});
  c.push_back({"ConcatV2", {{1, 3}, {2, 3}}, [](const Scope& s, const In& x) {
                 return ops::Concat(s, {Hidden(s, x[0]), Hidden(s, x[1])}, RunTime(s, I32({0}, {})));
               }});
  c.push_back({"Split", {{2, 6}}, [](const Scope& s, const In& x) {
                 auto parts = ops::Split(s, 1, x[0], 3);
                 return ops::Mul(s, parts[0], ops::Sin(s, parts[2]));  // parts[1] gets zeros
               }});
  c.push_back({"Split", {{4, 3}}, [](const Scope& s, const In& x) {
                 auto parts = ops::Split(s, -2, Hidden(s, x[0]), 2);
                 return ops::Concat(s, {parts[1], parts[0], parts[1]}, 0);
               }});
}

void AddSliceCases(std::vector<GradCase>& c) {
  c.push_back({"Slice", {{3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Slice(s, x[0], {1, 0}, {2, -1});
               }});
  c.push_back({"Slice", {{2, 3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Slice(s, x[0], Tensor::FromVector<int64_t>({0, 1, 1}),
                                   Tensor::FromVector<int64_t>({2, 1, 2}));
               }});
  c.push_back({"Slice", {{3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Slice(s, Hidden(s, x[0]), RunTime(s, I32({1, 1})), {-1, 2});
               }});
  using Masks = ops::StridedSliceAttrs;
  auto strided = [](std::vector<int32_t> b, std::vector<int32_t> e, std::vector<int32_t> st,
                    Masks m, bool hidden) {
    return [=](const Scope& s, const In& x) {
      return ops::StridedSlice(s, hidden ? Hidden(s, x[0]) : x[0], I32(b), I32(e), I32(st), m);
    };
  };
  // x[1:3, -1:0:-2]
  c.push_back({"StridedSlice", {{4, 5}}, strided({1, -1}, {3, 0}, {1, -2}, {}, false)});
  // x[..., ::-1]
  c.push_back({"StridedSlice", {{2, 3, 4}},
               strided({0, 0}, {0, 0}, {1, -1}, {.begin_mask = 2, .end_mask = 2, .ellipsis_mask = 1}, false)});
  // x[1, newaxis, ::2]
  c.push_back({"StridedSlice", {{3, 4}},
               strided({1, 0, 0}, {2, 0, 0}, {1, 1, 2},
                       {.begin_mask = 4, .end_mask = 4, .new_axis_mask = 2, .shrink_axis_mask = 1}, false)});
  // x[-2::-1, 1] with x's dims unknown while building
  c.push_back({"StridedSlice", {{3, 4}},
               strided({-2, 1}, {0, 2}, {-1, 1}, {.end_mask = 1, .shrink_axis_mask = 2}, true)});
  // The gradient op itself: dy of x[1:3, ::2] placed in a [4, 5] tensor.
  c.push_back({"StridedSliceGrad", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::StridedSliceGrad(s, {4, 5}, {1, 0}, {3, 0}, {1, 2}, x[0], {.end_mask = 2});
               }});
}

void AddPadTileFill(std::vector<GradCase>& c) {
  c.push_back({"Pad", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::Pad(s, x[0], I32({1, 0, 2, 1}, {2, 2}));
               }});
  c.push_back({"Pad", {{2, 1, 3}}, [](const Scope& s, const In& x) {
                 auto paddings = RunTime(s, Tensor::FromVector<int64_t>({0, 1, 2, 0, 1, 1}, {3, 2}));
                 return ops::Pad(s, Hidden(s, x[0]), paddings);
               }});
  c.push_back({"PadV2", {{2, 3}, {}}, [](const Scope& s, const In& x) {
                 return ops::PadV2(s, x[0], I32({0, 2, 1, 1}, {2, 2}), x[1]);
               }});
  c.push_back({"PadV2", {{3}, {}}, [](const Scope& s, const In& x) {
                 return ops::PadV2(s, Hidden(s, x[0]), RunTime(s, I32({2, 1}, {1, 2})), x[1]);
               }});
  c.push_back({"Tile", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::Tile(s, x[0], {2, 1});
               }});
  c.push_back({"Tile", {{2, 1, 3}}, [](const Scope& s, const In& x) {
                 return ops::Tile(s, x[0], Tensor::FromVector<int64_t>({1, 3, 2}));
               }});
  c.push_back({"Tile", {{2, 2}}, [](const Scope& s, const In& x) {
                 return ops::Tile(s, Hidden(s, x[0]), RunTime(s, I32({2, 3})));
               }});
  c.push_back({"Fill", {{}}, [](const Scope& s, const In& x) {
                 return ops::Fill(s, {2, 3}, x[0]);
               }});
  c.push_back({"Fill", {{}}, [](const Scope& s, const In& x) {
                 return ops::Mul(s, ops::Fill(s, RunTime(s, I32({3, 2})), x[0]), x[0]);
               }});
}

void AddGatherSegmentSum(std::vector<GradCase>& c) {
  auto gather = [](Tensor indices, int axis, int64_t batch_dims, bool hidden) {
    return [=](const Scope& s, const In& x) {
      return ops::GatherV2(s, hidden ? Hidden(s, x[0]) : x[0], indices, axis, {.batch_dims = batch_dims});
    };
  };
  // Repeated indices: their gradients add up.
  c.push_back({"GatherV2", {{5, 3}}, gather(I32({2, 0, 2, 4}), 0, 0, false)});
  c.push_back({"GatherV2", {{2, 4, 3}}, gather(I32({3, 0, 3, 3}, {2, 2}), 1, 0, false)});
  c.push_back({"GatherV2", {{2, 3}}, gather(Tensor::FromVector<int64_t>({2, 2, 0}), -1, 0, false)});
  c.push_back({"GatherV2", {{3, 4}}, gather(Tensor::Scalar<int64_t>(1), 1, 0, false)});
  c.push_back({"GatherV2", {{2, 4, 3}}, gather(I32({1, 1, 3}), 1, 0, true)});
  // batch_dims 1: row b of the indices picks from batch b of params.
  c.push_back({"GatherV2", {{2, 3, 4}}, gather(I32({2, 0, 1, 1}, {2, 2}), 1, 1, false)});
  c.push_back({"GatherV2", {{2, 3, 4}}, gather(I32({3, 0, 3, 1, 2, 0}, {2, 3}), 2, -1, true)});
  c.push_back({"UnsortedSegmentSum", {{4, 3}}, [](const Scope& s, const In& x) {
                 return ops::UnsortedSegmentSum(s, x[0], I32({0, 2, 0, -1}), 3);  // row 3 dropped
               }});
  c.push_back({"UnsortedSegmentSum", {{2, 3, 2}}, [](const Scope& s, const In& x) {
                 auto ids = RunTime(s, Tensor::FromVector<int64_t>({1, 0, 1, 3, -1, 0}, {2, 3}));
                 return ops::UnsortedSegmentSum(s, Hidden(s, x[0]), ids, 4);
               }});
  c.push_back({"UnsortedSegmentSum", {{3, 2}}, [](const Scope& s, const In& x) {
                 return ops::UnsortedSegmentSum(s, x[0], I32({1, 1, 0}), RunTime(s, I32({2}, {})));
               }});
}

}  // namespace

void AddArrayIndexCases(std::vector<GradCase>& cases) {
  AddTransposeConcatSplit(cases);
  AddSliceCases(cases);
  AddPadTileFill(cases);
  AddGatherSegmentSum(cases);
}

}  // namespace dflow::testing
