// Array ops that reshape, reorder, join, split, pad, tile and fill, checked
// against naive index-by-index references on random shapes (zero-size dims,
// scalars, negative axes) in every dtype, plus their error messages.
#include <algorithm>
#include <limits>
#include <numeric>

#include "ops/ops.h"
#include "tests/ops/array_test_util.h"

using namespace dflow;
using namespace dflow::testing;

TEST_CASE("Reshape keeps the elements and resolves -1", "[array]") {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 0, 4);
    std::vector<int64_t> dims = shape.dims();
    std::shuffle(dims.begin(), dims.end(), rng);
    if (trial % 3 == 0) dims.insert(dims.begin() + Uniform(rng, 0, dims.size()), 1);
    std::vector<int64_t> requested = dims;
    int64_t others = 1;
    int pick = dims.empty() ? -1 : static_cast<int>(Uniform(rng, 0, dims.size() - 1));
    for (int i = 0; i < static_cast<int>(dims.size()); ++i) others *= i == pick ? 1 : dims[i];
    if (pick >= 0 && others > 0) requested[pick] = -1;
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    Tensor x = Sample(shape, trial).CastTo(dtype);
    INFO(shape.ToString() << " -> " << array::IntsString(requested));
    Tensor y = RunOp1({.op = "Reshape", .inputs = {x, Int32s(requested)}, .const_inputs = ConstIf(trial % 2, {1})});
    REQUIRE(y.shape() == Shape(dims));
    ExpectEqual(y, x.Reshaped(Shape(dims)));
  }
}

TEST_CASE("Reshape errors name both shapes", "[array]") {
  Tensor x = Sample({2, 3}, 1);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "Reshape", .inputs = {x, Int32s({4, 2})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "cannot reshape a tensor of shape [2,3] (6 elements) to shape [4,2] (8 elements)");
    ExpectError([&] { RunOp({.op = "Reshape", .inputs = {x, Int32s({-1, 4})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "6 is not a multiple of 4");
    ExpectError([&] { RunOp({.op = "Reshape", .inputs = {x, Int32s({-1, -1})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "more than one -1");
  }
  ExpectError([&] { RunOp({.op = "Reshape", .inputs = {Sample({0, 3}, 1), Int32s({0, -1})}}); },
              Code::kInvalidArgument, "cannot infer the -1");
}

TEST_CASE("Reshape shares the buffer and reads shapes known while building", "[array]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, 3, 4});
  auto z = ops::Placeholder(s.WithOpName("z"), DType::kInt8, {4, 6});
  auto y = ops::Reshape(s.WithOpName("y"), x, ops::Shape(s, z));
  CHECK(y.shape() == Shape({4, 6}));
  auto flat = ops::Reshape(s, x, {-1});
  CHECK(flat.shape() == Shape({24}));
  auto fed = ops::Placeholder(s, DType::kInt32, {2});
  CHECK(ops::Reshape(s, x, fed).shape() == Shape({-1, -1}));
  Session session(s);
  Tensor value = Sample({2, 3, 4}, 3).CastTo(DType::kFloat32);
  auto out = session.Run({{x, value}}, {y, flat});
  CHECK(out[0].SharesBufferWith(value));
  ExpectEqual(out[1], value.Reshaped({24}));
}

TEST_CASE("Transpose matches a naive reference", "[array]") {
  std::mt19937_64 rng(2);
  std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{67, 130}, {1, 0}}, {{3, 40, 50}, {0, 2, 1}}, {{5, 6, 7, 8}, {3, 1, 2, 0}},
      {{2, 33, 3, 35}, {0, 3, 2, 1}}, {{4, 1, 5}, {2, 1, 0}}, {{7, 1}, {1, 0}}, {{}, {}}};
  for (int trial = 0; trial < 50; ++trial) {
    Shape shape = RandomShape(rng, 0, 5);
    std::vector<int64_t> perm(shape.rank());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    cases.push_back({shape, perm});
  }
  int trial = 0;
  for (const auto& [shape, perm] : cases) {
    Tensor x = Sample(shape, trial);
    Shape out_shape;
    for (int64_t p : perm) out_shape.AddDim(shape.dim(static_cast<int>(p)));
    Tensor expected = Generate(out_shape, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> source(index.size());
      for (size_t i = 0; i < perm.size(); ++i) source[perm[i]] = index[i];
      return At(x, source);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " perm " << array::IntsString(perm) << " " << DTypeName(dtype));
    ExpectEqual(RunOp1({.op = "Transpose", .inputs = {x.CastTo(dtype), Int64s(perm)}, .const_inputs = ConstIf(trial % 2, {1})}),
                expected.CastTo(dtype));
    ++trial;
  }
}

TEST_CASE("Transpose rejects a bad perm", "[array]") {
  Tensor x = Sample({2, 3}, 1);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "Transpose", .inputs = {x, Int32s({0, 0})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "perm [0,0] is not a permutation of 0..1");
    ExpectError([&] { RunOp({.op = "Transpose", .inputs = {x, Int32s({0, 1, 2})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "has rank 2");
  }
}

TEST_CASE("ConcatV2 matches a naive reference", "[array]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    Shape base = RandomShape(rng, 1, 4);
    int64_t axis = Uniform(rng, -base.rank(), base.rank() - 1);
    int a = static_cast<int>(axis < 0 ? axis + base.rank() : axis);
    int n = static_cast<int>(Uniform(rng, 1, 4));
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    std::vector<Tensor> inputs, doubles;
    std::vector<int64_t> starts;
    Shape out_shape = base;
    out_shape.set_dim(a, 0);
    for (int i = 0; i < n; ++i) {
      Shape s = base;
      s.set_dim(a, Uniform(rng, 0, 3));
      starts.push_back(out_shape.dim(a));
      out_shape.set_dim(a, out_shape.dim(a) + s.dim(a));
      doubles.push_back(Sample(s, trial * 10 + i));
      inputs.push_back(doubles.back().CastTo(dtype));
    }
    Tensor expected = Generate(out_shape, [&](std::vector<int64_t> index) {
      int k = n - 1;
      while (starts[k] > index[a]) --k;
      index[a] -= starts[k];
      return At(doubles[k], index);
    });
    inputs.push_back(trial % 3 ? Tensor::Scalar<int32_t>(axis) : Tensor::Scalar<int64_t>(axis));
    INFO(base.ToString() << " axis " << axis << " n " << n);
    ExpectEqual(RunOp1({.op = "ConcatV2", .inputs = inputs, .const_inputs = ConstIf(trial % 2, {n})}),
                expected.CastTo(dtype));
  }
}

TEST_CASE("ConcatV2 errors name the shapes", "[array]") {
  Tensor axis0 = Tensor::Scalar<int32_t>(0);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "ConcatV2", .inputs = {Sample({2, 3}, 1), Sample({2, 4}, 2), axis0}, .const_inputs = ConstIf(as_const, {2})}); },
                Code::kInvalidArgument, "input 1 has shape [2,4] but input 0 has shape [2,3]: they differ in dimension 1");
    ExpectError([&] { RunOp({.op = "ConcatV2", .inputs = {Sample({2, 3}, 1), Sample({2}, 2), axis0}, .const_inputs = ConstIf(as_const, {2})}); },
                Code::kInvalidArgument, "same rank");
    ExpectError([&] { RunOp({.op = "ConcatV2", .inputs = {Sample({}, 1), Sample({}, 2), axis0}, .const_inputs = ConstIf(as_const, {2})}); },
                Code::kInvalidArgument, "cannot concatenate scalars");
    ExpectError([&] { RunOp({.op = "ConcatV2", .inputs = {Sample({2}, 1), Tensor::Scalar<int32_t>(-2)}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "axis -2 is out of range for a tensor of rank 1 (valid: [-1, 1))");
  }
}

TEST_CASE("Split matches a naive reference", "[array]") {
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 1, 4);
    int64_t axis = Uniform(rng, -shape.rank(), shape.rank() - 1);
    int a = static_cast<int>(axis < 0 ? axis + shape.rank() : axis);
    int64_t num_split = Uniform(rng, 1, 3);
    shape.set_dim(a, num_split * Uniform(rng, 0, 3));
    Tensor x = Sample(shape, trial);
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " axis " << axis << " num_split " << num_split);
    auto pieces = RunOp({.op = "Split", .inputs = {Tensor::Scalar<int32_t>(axis), x.CastTo(dtype)},
                         .attrs = {{"num_split", num_split}}, .const_inputs = ConstIf(trial % 2, {0})});
    REQUIRE(static_cast<int64_t>(pieces.size()) == num_split);
    Shape piece_shape = shape;
    piece_shape.set_dim(a, shape.dim(a) / num_split);
    for (int64_t k = 0; k < num_split; ++k)
      ExpectEqual(pieces[k], Generate(piece_shape, [&](std::vector<int64_t> index) {
                               index[a] += k * piece_shape.dim(a);
                               return At(x, index);
                             }).CastTo(dtype));
  }
}

TEST_CASE("Split needs a divisible dimension", "[array]") {
  for (bool as_const : {true, false})
    ExpectError([&] { RunOp({.op = "Split", .inputs = {Tensor::Scalar<int32_t>(1), Sample({2, 7}, 1)},
                             .attrs = {{"num_split", int64_t{3}}}, .const_inputs = ConstIf(as_const, {0})}); },
                Code::kInvalidArgument, "dimension 1 of shape [2,7] (size 7) is not divisible by num_split 3");
}

TEST_CASE("Pad and PadV2 match a naive reference", "[array]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 0, 4);
    std::vector<int64_t> paddings;
    Shape out_shape = shape;
    for (int d = 0; d < shape.rank(); ++d) {
      paddings.push_back(Uniform(rng, 0, 2));
      paddings.push_back(Uniform(rng, 0, 2));
      out_shape.set_dim(d, shape.dim(d) + paddings[2 * d] + paddings[2 * d + 1]);
    }
    bool v2 = trial % 2;
    double fill = v2 ? static_cast<double>(Uniform(rng, 1, 9)) : 0.0;
    Tensor x = Sample(shape, trial);
    Tensor expected = Generate(out_shape, [&](std::vector<int64_t> index) {
      for (int d = 0; d < shape.rank(); ++d) {
        index[d] -= paddings[2 * d];
        if (index[d] < 0 || index[d] >= shape.dim(d)) return fill;
      }
      return At(x, index);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    Tensor table = Int32s(paddings).Reshaped(Shape{shape.rank(), 2});
    std::vector<Tensor> inputs = {x.CastTo(dtype), table};
    if (v2) inputs.push_back(Tensor::Scalar(fill).CastTo(dtype));
    INFO(shape.ToString() << " paddings " << array::IntsString(paddings) << " fill " << fill);
    ExpectEqual(RunOp1({.op = v2 ? "PadV2" : "Pad", .inputs = inputs, .const_inputs = ConstIf(trial % 4 < 2, {1})}),
                expected.CastTo(dtype));
  }
}

TEST_CASE("Pad rejects bad paddings", "[array]") {
  Tensor x = Sample({2, 3}, 1);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "Pad", .inputs = {x, Int32s({0, 1, -1, 0}).Reshaped({2, 2})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "paddings must be non-negative");
    ExpectError([&] { RunOp({.op = "Pad", .inputs = {x, Int32s({0, 1, 1, 0, 0, 0}).Reshaped({3, 2})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "paddings");
  }
}

TEST_CASE("Tile matches a naive reference", "[array]") {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 0, 4, 3);
    std::vector<int64_t> multiples;
    Shape out_shape = shape;
    for (int d = 0; d < shape.rank(); ++d) {
      multiples.push_back(Uniform(rng, trial % 5 == 0 ? 0 : 1, 3));
      out_shape.set_dim(d, shape.dim(d) * multiples.back());
    }
    Tensor x = Sample(shape, trial);
    Tensor expected = Generate(out_shape, [&](std::vector<int64_t> index) {
      for (int d = 0; d < shape.rank(); ++d) index[d] %= shape.dim(d);
      return At(x, index);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " multiples " << array::IntsString(multiples));
    ExpectEqual(RunOp1({.op = "Tile", .inputs = {x.CastTo(dtype), Int32s(multiples)}, .const_inputs = ConstIf(trial % 2, {1})}),
                expected.CastTo(dtype));
  }
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "Tile", .inputs = {Sample({2, 3}, 1), Int32s({2})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "one entry per dimension");
    ExpectError([&] { RunOp({.op = "Tile", .inputs = {Sample({2, 3}, 1), Int32s({2, -1})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "negative");
  }
}

TEST_CASE("BroadcastTo matches a naive reference", "[array]") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    Shape target = RandomShape(rng, 0, 4);
    Shape shape;
    int offset = static_cast<int>(Uniform(rng, 0, target.rank()));
    for (int d = offset; d < target.rank(); ++d) shape.AddDim(Uniform(rng, 0, 1) ? target.dim(d) : 1);
    Tensor x = Sample(shape, trial);
    Tensor expected = Generate(target, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> source;
      for (int d = 0; d < shape.rank(); ++d) source.push_back(shape.dim(d) == 1 ? 0 : index[d + offset]);
      return At(x, source);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " -> " << target.ToString());
    ExpectEqual(RunOp1({.op = "BroadcastTo", .inputs = {x.CastTo(dtype), Int64s(target.dims())}, .const_inputs = ConstIf(trial % 2, {1})}),
                expected.CastTo(dtype));
  }
  for (bool as_const : {true, false})
    ExpectError([&] { RunOp({.op = "BroadcastTo", .inputs = {Sample({2, 3}, 1), Int32s({3, 3})}, .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "cannot broadcast a tensor of shape [2,3] to shape [3,3]");
}

TEST_CASE("ExpandDims and Squeeze move dims of size 1", "[array]") {
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 30; ++trial) {
    Shape shape = RandomShape(rng, 0, 4);
    int64_t axis = Uniform(rng, -shape.rank() - 1, shape.rank());
    std::vector<int64_t> dims = shape.dims();
    dims.insert(dims.begin() + (axis < 0 ? axis + shape.rank() + 1 : axis), 1);
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    Tensor x = Sample(shape, trial).CastTo(dtype);
    Tensor expanded = RunOp1({.op = "ExpandDims", .inputs = {x, Tensor::Scalar<int32_t>(axis)}, .const_inputs = ConstIf(trial % 2, {1})});
    ExpectEqual(expanded, x.Reshaped(Shape(dims)));
    // Squeeze all size-1 dims, or just the one added (by a negative index half the time).
    std::vector<int64_t> squeezed;
    for (int64_t d : dims)
      if (d != 1) squeezed.push_back(d);
    ExpectEqual(RunOp1({.op = "Squeeze", .inputs = {expanded}}), x.Reshaped(Shape(squeezed)));
    int64_t a = axis < 0 ? axis + shape.rank() + 1 : axis;
    int64_t listed = trial % 2 ? a : a - static_cast<int64_t>(dims.size());
    ExpectEqual(RunOp1({.op = "Squeeze", .inputs = {expanded}, .attrs = {{"squeeze_dims", std::vector<int64_t>{listed}}}}), x);
  }
  ExpectError([&] { RunOp({.op = "Squeeze", .inputs = {Sample({2, 1}, 1)}, .attrs = {{"squeeze_dims", std::vector<int64_t>{0}}}}); },
              Code::kInvalidArgument, "cannot squeeze dimension 0 of shape [2,1]: its size is 2, not 1");
  ExpectError([&] { RunOp({.op = "ExpandDims", .inputs = {Sample({2}, 1), Tensor::Scalar<int32_t>(2)}, .const_inputs = {1}}); },
              Code::kInvalidArgument, "axis 2 is out of range for ExpandDims of a tensor of rank 1 (valid: [-2, 1])");
  // A dim unknown while building: Squeeze cannot tell whether it goes.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DType::kFloat32, {-1, 1, 3});
  CHECK(ops::Squeeze(s, x).shape().unknown_rank());
  CHECK(ops::Squeeze(s, x, {.squeeze_dims = {1}}).shape() == Shape({-1, 3}));
  CHECK(ops::ExpandDims(s, x, -1).shape() == Shape({-1, 1, 3, 1}));
  auto p = ops::Placeholder(s, DType::kFloat32, {-1, 3});
  auto y = ops::Squeeze(s, p, {.squeeze_dims = {0}});
  Session session(s);
  ExpectError([&] { session.Run({{p, Sample({2, 3}, 1).CastTo(DType::kFloat32)}}, {y}); },
              Code::kInvalidArgument, "its size is 2, not 1");
}

TEST_CASE("Fill, ZerosLike and OnesLike work in every dtype", "[array]") {
  std::mt19937_64 rng(9);
  int trial = 0;
  for (DType dtype : kMoveTypes) {
    Shape shape = RandomShape(rng, 0, 3);
    double v = static_cast<double>(Uniform(rng, 1, 9));
    Tensor filled = RunOp1({.op = "Fill", .inputs = {Int32s(shape.dims()), Tensor::Scalar(v).CastTo(dtype)},
                            .const_inputs = ConstIf(trial++ % 2, {0})});
    ExpectEqual(filled, Generate(shape, [&](const auto&) { return v; }).CastTo(dtype));
    Tensor x = Sample(shape, trial).CastTo(dtype);
    ExpectEqual(RunOp1({.op = "ZerosLike", .inputs = {x}}), Tensor::Zeros(DType::kFloat64, shape).CastTo(dtype));
    ExpectEqual(RunOp1({.op = "OnesLike", .inputs = {x}}),
                Generate(shape, [](const auto&) { return 1.0; }).CastTo(dtype));
  }
  for (bool as_const : {true, false})
    ExpectError([&] { RunOp({.op = "Fill", .inputs = {Int32s({2, -3}), Tensor::Scalar(1.0f)}, .const_inputs = ConstIf(as_const, {0})}); },
                Code::kInvalidArgument, "dims [2,-3] has a negative dimension");
  ExpectError([&] { RunOp({.op = "Fill", .inputs = {Int32s({2}), Tensor::FromVector<float>({1, 2})}}); },
              Code::kInvalidArgument, "value must be a scalar");
}

TEST_CASE("Range counts from start towards limit", "[array]") {
  auto range = [](auto start, auto limit, auto delta, bool as_const) {
    return RunOp1({.op = "Range", .inputs = {Tensor::Scalar(start), Tensor::Scalar(limit), Tensor::Scalar(delta)},
                   .const_inputs = ConstIf(as_const, {0, 1, 2})});
  };
  for (bool as_const : {true, false}) {
    ExpectEqual(range(0, 10, 3, as_const), Tensor::FromVector<int32_t>({0, 3, 6, 9}));
    ExpectEqual(range(10, 0, -3, as_const), Tensor::FromVector<int32_t>({10, 7, 4, 1}));
    ExpectEqual(range(int64_t{5}, int64_t{5}, int64_t{1}, as_const), Tensor::FromVector<int64_t>({}));
    ExpectEqual(range(int64_t{-4}, int64_t{3}, int64_t{2}, as_const), Tensor::FromVector<int64_t>({-4, -2, 0, 2}));
    ExpectClose(range(0.0f, 1.0f, 0.25f, as_const), Tensor::FromVector<float>({0, 0.25f, 0.5f, 0.75f}));
    ExpectClose(range(1.0, 0.0, -0.3, as_const), Tensor::FromVector<double>({1, 0.7, 0.4, 0.1}), 1e-12, 1e-12);
    ExpectError([&] { range(0, 10, 0, as_const); }, Code::kInvalidArgument, "delta must be non-zero");
    ExpectError([&] { range(0, 10, -1, as_const); }, Code::kInvalidArgument, "start 0 must be >= limit 10 when delta -1 is negative");
    ExpectError([&] { range(3.0, 1.0, 0.5, as_const); }, Code::kInvalidArgument, "must be <= limit");
  }
}

TEST_CASE("Shape, Size and Rank report the input's shape", "[array]") {
  std::mt19937_64 rng(10);
  for (int trial = 0; trial < 12; ++trial) {
    Shape shape = RandomShape(rng, 0, 4);
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    Tensor x = Sample(shape, trial).CastTo(dtype);
    ExpectEqual(RunOp1({.op = "Shape", .inputs = {x}}), Int32s(shape.dims()));
    ExpectEqual(RunOp1({.op = "Shape", .inputs = {x}, .attrs = {{"out_type", DType::kInt64}}}), Int64s(shape.dims()));
    ExpectEqual(RunOp1({.op = "Size", .inputs = {x}}), Tensor::Scalar<int32_t>(shape.NumElements()));
    ExpectEqual(RunOp1({.op = "Size", .inputs = {x}, .attrs = {{"out_type", DType::kInt64}}}),
                Tensor::Scalar<int64_t>(shape.NumElements()));
    ExpectEqual(RunOp1({.op = "Rank", .inputs = {x}}), Tensor::Scalar<int32_t>(shape.rank()));
  }
  // Known while building exactly when the input's shape (rank for Rank) is.
  Scope s = Scope::NewRootScope();
  auto known = ops::Placeholder(s, DType::kBool, {2, 0, 3});
  auto partial = ops::Placeholder(s, DType::kFloat32, {-1, 3});
  auto value = KnownValue(ops::Shape(s, known, {.out_type = DType::kInt64}));
  REQUIRE(value);
  ExpectEqual(*value, Int64s({2, 0, 3}));
  ExpectEqual(*KnownValue(ops::Size(s, known)), Tensor::Scalar<int32_t>(0));
  ExpectEqual(*KnownValue(ops::Rank(s, partial)), Tensor::Scalar<int32_t>(2));
  CHECK_FALSE(KnownValue(ops::Shape(s, partial)));
  CHECK_FALSE(KnownValue(ops::Size(s, partial)));
  CHECK(ops::Shape(s, partial).shape() == Shape({2}));
  CHECK(ops::Shape(s, ops::Placeholder(s, DType::kFloat32)).shape() == Shape({-1}));
  // The partial shape is filled in at run time.
  Session session(s);
  ExpectEqual(session.Run({{partial, Tensor::Zeros(DType::kFloat32, {5, 3})}}, {ops::Shape(s, partial)})[0],
              Int32s({5, 3}));
}

TEST_CASE("Identity and StopGradient pass the input through", "[array]") {
  int trial = 0;
  for (DType dtype : kMoveTypes) {
    Tensor x = Sample({3, trial % 3}, trial).CastTo(dtype);
    ++trial;
    ExpectEqual(RunOp1({.op = "Identity", .inputs = {x}}), x);
    ExpectEqual(RunOp1({.op = "StopGradient", .inputs = {x}}), x);
  }
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DType::kFloat32, {4});
  auto y = ops::StopGradient(s, ops::Identity(s, x));
  Tensor value = Sample({4}, 1).CastTo(DType::kFloat32);
  CHECK(Session(s).Run({{x, value}}, {y})[0].SharesBufferWith(value));
}

TEST_CASE("array builders convert literals sensibly", "[array]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DType::kFloat64, {2, 3});
  auto t = ops::Transpose(s, x, {1, 0});
  CHECK(t.shape() == Shape({3, 2}));
  auto c = ops::Concat(s, {x, Tensor::FromVector<double>({1, 2, 3}, {1, 3})}, 0);
  CHECK(c.shape() == Shape({3, 3}));
  auto pieces = ops::Split(s, 1, x, 3);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].shape() == Shape({2, 1}));
  auto padded = ops::PadV2(s, x, Int32s({1, 1, 0, 2}).Reshaped({2, 2}), 7);  // 7 becomes float64
  CHECK(padded.shape() == Shape({4, 5}));
  auto tiled = ops::Tile(s, x, {2, 1});
  auto b = ops::BroadcastTo(s, ops::Const(s, 1.5), {2, 2});
  auto f = ops::Fill(s, {2}, 0.5f);
  auto r = ops::Range(s, 0, 5, 2);
  CHECK(r.shape() == Shape({3}));
  Session session(s);
  Tensor value = Sample({2, 3}, 2);
  auto out = session.Run({{x, value}}, {c, pieces[2], padded, tiled, b, f, r});
  ExpectEqual(out[0], Tensor::FromVector<double>({value.data<double>()[0], value.data<double>()[1], value.data<double>()[2],
                                                  value.data<double>()[3], value.data<double>()[4], value.data<double>()[5],
                                                  1, 2, 3}, {3, 3}));
  ExpectEqual(out[1], Tensor::FromVector<double>({value.data<double>()[2], value.data<double>()[5]}, {2, 1}));
  CHECK(out[2].dtype() == DType::kFloat64);
  CHECK(out[2].data<double>()[0] == 7);
  CHECK(out[3].shape() == Shape({4, 3}));
  ExpectEqual(out[4], Tensor::FromVector<double>({1.5, 1.5, 1.5, 1.5}, {2, 2}));
  ExpectEqual(out[5], Tensor::FromVector<float>({0.5f, 0.5f}));
  ExpectEqual(out[6], Tensor::FromVector<int32_t>({0, 2, 4}));
}

// Hostile shapes whose element count or byte size does not fit in 64 bits
// (2^32 * 2^32 used to wrap to 0 elements) fail naming the node and the
// shape, whether shape inference sees the values (Const) or only the kernel
// does (fed): nothing is allocated short and nothing crashes.
TEST_CASE("shapes too large to address fail naming the node and the shape", "[array][overflow]") {
  const int64_t k2to32 = int64_t{1} << 32;
  auto too_large = [](const OpRun& run, const std::string& shape) {
    for (bool as_const : {true, false}) {
      OpRun r = run;
      r.const_inputs = as_const ? run.const_inputs : std::set<int>{};
      INFO(r.op << (as_const ? " with Const inputs" : " with fed inputs"));
      try {
        RunOp(r);
        FAIL("no error");
      } catch (const Error& e) {
        std::string message = e.what();
        INFO(message);
        CHECK(e.code() == Code::kInvalidArgument);
        CHECK(message.find(shape) != std::string::npos);
        // While building: "Reshape 'op': ..."; while running: "[[node op (Reshape) ...".
        CHECK((message.find(r.op + " 'op'") != std::string::npos ||
               message.find("node op (" + r.op + ")") != std::string::npos));
      }
    }
  };
  Tensor empty = Tensor::FromVector<float>({});
  too_large({.op = "Reshape", .inputs = {empty, Int64s({k2to32, k2to32})}, .const_inputs = {1}},
            "[4294967296,4294967296]");
  too_large({.op = "Fill", .inputs = {Int64s({k2to32, k2to32, k2to32}), Tensor::Scalar(1.0f)},
             .const_inputs = {0}},
            "[4294967296,4294967296,4294967296]");
  too_large({.op = "BroadcastTo", .inputs = {Tensor::Scalar(1.0f), Int64s({k2to32, 0, k2to32})},
             .const_inputs = {1}},
            "[4294967296,0,4294967296]");
  // A dimension that itself overflows: 2^62 * 4.
  too_large({.op = "Tile", .inputs = {Sample({2}, 1), Int64s({int64_t{1} << 62})}, .const_inputs = {1}},
            "4611686018427387904");
  too_large({.op = "Range", .inputs = {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(int64_t{1} << 61),
                                       Tensor::Scalar<int64_t>(1)},
             .const_inputs = {0, 1, 2}},
            "[2305843009213693952]");
  // begin + size would wrap around to a small number and pass the bounds check.
  for (bool as_const : {true, false})
    ExpectError([&] {
      RunOp({.op = "Slice", .inputs = {Sample({4}, 1), Int64s({2}), Int64s({std::numeric_limits<int64_t>::max()})},
             .const_inputs = ConstIf(as_const, {1, 2})});
    }, Code::kInvalidArgument, "out of bounds");
}

TEST_CASE("a tensor above the allocation limit is refused, naming its size and the limit", "[array][overflow]") {
  SetMaxAllocationBytes(int64_t{1} << 20);
  for (bool as_const : {true, false})
    ExpectError([&] {
      RunOp({.op = "Fill", .inputs = {Int64s({1024, 1024}), Tensor::Scalar(1.0f)}, .const_inputs = ConstIf(as_const, {0})});
    }, Code::kInvalidArgument, "cannot allocate 4.0 MiB");
  SetMaxAllocationBytes(0);
  CHECK(MaxAllocationBytes() > (int64_t{1} << 20));
}
