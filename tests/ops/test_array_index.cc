// Array ops that index into tensors (Slice, StridedSlice, GatherV2,
// UnsortedSegmentSum, OneHot), checked against naive references on random
// inputs in several dtypes, plus their error messages.
#include <optional>

#include "ops/ops.h"
#include "tests/ops/array_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

bool Bit(int64_t mask, int i) { return (mask >> i) & 1; }

// Python's slice(start, stop, step).indices(n): the positions visited.
std::vector<int64_t> PythonSlice(std::optional<int64_t> start, std::optional<int64_t> stop,
                                 int64_t step, int64_t n) {
  auto adjust = [&](std::optional<int64_t> v, bool is_start) {
    if (!v) return is_start ? (step < 0 ? n - 1 : 0) : (step < 0 ? -1 : n);
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  std::vector<int64_t> positions;
  for (int64_t i = adjust(start, true), end = adjust(stop, false); step > 0 ? i < end : i > end; i += step)
    positions.push_back(i);
  return positions;
}

struct SliceSpec {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
};

// StridedSlice done the numpy way, entry by entry. Returns nullopt for a spec
// numpy would reject (too many indices, a shrink index out of range).
std::optional<Tensor> ReferenceStridedSlice(const Tensor& x, const SliceSpec& spec) {
  int n = static_cast<int>(spec.begin.size()), rank = x.rank();
  int ellipsis_at = -1, consuming = 0;
  for (int i = 0; i < n; ++i)
    if (Bit(spec.ellipsis_mask, i) && ellipsis_at < 0) ellipsis_at = i;
    else if (!Bit(spec.new_axis_mask, i)) ++consuming;
  if (consuming > rank) return std::nullopt;
  struct OutDim { int input_dim; std::vector<int64_t> positions; };
  std::vector<OutDim> out;
  std::vector<int64_t> fixed(rank, -1);
  int d = 0;
  auto whole = [&](int dim) { out.push_back({dim, PythonSlice({}, {}, 1, x.dim(dim))}); };
  for (int i = 0; i < n; ++i) {
    if (i == ellipsis_at) {
      for (int k = 0; k < rank - consuming; ++k) whole(d++);
    } else if (Bit(spec.new_axis_mask, i)) {
      out.push_back({-1, {0}});
    } else if (Bit(spec.shrink_axis_mask, i)) {
      int64_t index = spec.begin[i] < 0 ? spec.begin[i] + x.dim(d) : spec.begin[i];
      if (index < 0 || index >= x.dim(d)) return std::nullopt;
      fixed[d++] = index;
    } else {
      std::optional<int64_t> b, e;
      if (!Bit(spec.begin_mask, i)) b = spec.begin[i];
      if (!Bit(spec.end_mask, i)) e = spec.end[i];
      out.push_back({d, PythonSlice(b, e, spec.strides[i], x.dim(d))});
      ++d;
    }
  }
  if (ellipsis_at < 0)
    while (d < rank) whole(d++);
  Shape shape;
  for (const OutDim& o : out) shape.AddDim(static_cast<int64_t>(o.positions.size()));
  return Generate(shape, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source = fixed;
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].input_dim >= 0) source[out[k].input_dim] = out[k].positions[index[k]];
    return At(x, source);
  });
}

AttrMap MaskAttrs(const SliceSpec& spec) {
  return {{"begin_mask", spec.begin_mask}, {"end_mask", spec.end_mask},
          {"ellipsis_mask", spec.ellipsis_mask}, {"new_axis_mask", spec.new_axis_mask},
          {"shrink_axis_mask", spec.shrink_axis_mask}};
}

Tensor RunStridedSlice(const Tensor& x, const SliceSpec& spec, bool as_const) {
  return RunOp1({.op = "StridedSlice", .inputs = {x, Int32s(spec.begin), Int32s(spec.end), Int32s(spec.strides)},
                 .attrs = MaskAttrs(spec), .const_inputs = ConstIf(as_const, {1, 2, 3})});
}

SliceSpec RandomSpec(std::mt19937_64& rng, int rank) {
  SliceSpec spec;
  int n = static_cast<int>(Uniform(rng, 0, rank + 2));
  const int64_t strides[] = {-3, -2, -1, 1, 1, 1, 2, 3};
  for (int i = 0; i < n; ++i) {
    spec.begin.push_back(Uniform(rng, -7, 7));
    spec.end.push_back(Uniform(rng, -7, 7));
    spec.strides.push_back(strides[Uniform(rng, 0, 7)]);
    auto chance = [&](double p) { return int64_t{std::bernoulli_distribution(p)(rng)} << i; };
    spec.begin_mask |= chance(0.3);
    spec.end_mask |= chance(0.3);
    spec.new_axis_mask |= chance(0.15);
    spec.shrink_axis_mask |= chance(0.2);
  }
  if (n > 0 && Uniform(rng, 0, 2) == 0) spec.ellipsis_mask = int64_t{1} << Uniform(rng, 0, n - 1);
  return spec;
}

// StridedSliceGrad done by hand: slicing a tensor of flat positions with the
// numpy reference says where each element of dy goes; all else is 0.
std::optional<Tensor> ReferenceStridedSliceGrad(const Shape& shape, const SliceSpec& spec,
                                                const Tensor& dy) {
  Tensor positions = Generate(shape, [&](const std::vector<int64_t>& i) { return double(Ravel(i, shape)); });
  std::optional<Tensor> picked = ReferenceStridedSlice(positions, spec);
  if (!picked || picked->shape() != dy.shape()) return std::nullopt;
  Tensor out = Tensor::Zeros(DType::kFloat64, shape);
  for (int64_t i = 0; i < dy.NumElements(); ++i)
    out.data<double>()[static_cast<int64_t>(picked->data<double>()[i])] = dy.data<double>()[i];
  return out;
}

Tensor RunStridedSliceGrad(const Shape& shape, const SliceSpec& spec, const Tensor& dy, bool as_const) {
  return RunOp1({.op = "StridedSliceGrad",
                 .inputs = {Int32s(shape.dims()), Int32s(spec.begin), Int32s(spec.end), Int32s(spec.strides), dy},
                 .attrs = MaskAttrs(spec), .const_inputs = ConstIf(as_const, {0, 1, 2, 3})});
}

}  // namespace

TEST_CASE("Slice matches a naive reference", "[array]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 0, 4, 5);
    std::vector<int64_t> begin, size;
    Shape out_shape;
    for (int d = 0; d < shape.rank(); ++d) {
      begin.push_back(Uniform(rng, 0, shape.dim(d)));
      size.push_back(Uniform(rng, -1, shape.dim(d) - begin[d]));
      out_shape.AddDim(size[d] == -1 ? shape.dim(d) - begin[d] : size[d]);
    }
    Tensor x = Sample(shape, trial);
    Tensor expected = Generate(out_shape, [&](std::vector<int64_t> index) {
      for (int d = 0; d < shape.rank(); ++d) index[d] += begin[d];
      return At(x, index);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " begin " << array::IntsString(begin) << " size " << array::IntsString(size));
    Tensor b = trial % 3 ? Int32s(begin) : Int64s(begin), s = trial % 3 ? Int32s(size) : Int64s(size);
    ExpectEqual(RunOp1({.op = "Slice", .inputs = {x.CastTo(dtype), b, s}, .const_inputs = ConstIf(trial % 2, {1, 2})}),
                expected.CastTo(dtype));
  }
  Tensor x = Sample({4, 3}, 1);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "Slice", .inputs = {x, Int32s({2, 0}), Int32s({3, -1})}, .const_inputs = ConstIf(as_const, {1, 2})}); },
                Code::kInvalidArgument, "slice begin [2,0] size [3,-1] is out of bounds for input shape [4,3] in dimension 0");
    ExpectError([&] { RunOp({.op = "Slice", .inputs = {x, Int32s({-1, 0}), Int32s({1, 1})}, .const_inputs = ConstIf(as_const, {1, 2})}); },
                Code::kInvalidArgument, "begin[0] = -1 is negative");
    ExpectError([&] { RunOp({.op = "Slice", .inputs = {x, Int32s({0}), Int32s({1})}, .const_inputs = ConstIf(as_const, {1, 2})}); },
                Code::kInvalidArgument, "one entry per dimension");
  }
}

TEST_CASE("StridedSlice matches numpy on random specs with every mask", "[array]") {
  std::mt19937_64 rng(12);
  int checked = 0;
  for (int trial = 0; checked < 150 && trial < 2000; ++trial) {
    Shape shape = RandomShape(rng, 0, 4, 5);
    SliceSpec spec = RandomSpec(rng, shape.rank());
    Tensor x = Sample(shape, trial);
    std::optional<Tensor> expected = ReferenceStridedSlice(x, spec);
    if (!expected) continue;
    DType dtype = kMoveTypes[checked % kMoveTypes.size()];
    INFO(shape.ToString() << " begin " << array::IntsString(spec.begin) << " end " << array::IntsString(spec.end)
         << " strides " << array::IntsString(spec.strides) << " masks b" << spec.begin_mask << " e" << spec.end_mask
         << " ...=" << spec.ellipsis_mask << " new" << spec.new_axis_mask << " shrink" << spec.shrink_axis_mask);
    ExpectEqual(RunStridedSlice(x.CastTo(dtype), spec, checked % 2), expected->CastTo(dtype));
    ++checked;
  }
  CHECK(checked == 150);
}

TEST_CASE("StridedSlice handles the usual index expressions", "[array]") {
  Tensor x = Generate({2, 3, 4}, [](const std::vector<int64_t>& i) { return double(i[0] * 12 + i[1] * 4 + i[2]); });
  auto slice = [&](SliceSpec spec) { return RunStridedSlice(x, spec, true); };
  // x[::-1]
  Tensor reversed = slice({.begin = {0}, .end = {0}, .strides = {-1}, .begin_mask = 1, .end_mask = 1});
  CHECK(reversed.shape() == Shape({2, 3, 4}));
  CHECK(reversed.data<double>()[0] == 12);
  // x[..., 0]
  ExpectEqual(slice({.begin = {0, 0}, .end = {0, 1}, .strides = {1, 1}, .ellipsis_mask = 1, .shrink_axis_mask = 2}),
              Tensor::FromVector<double>({0, 4, 8, 12, 16, 20}, {2, 3}));
  // x[:, newaxis, 1:]
  CHECK(slice({.begin = {0, 0, 1}, .end = {0, 0, 0}, .strides = {1, 1, 1}, .begin_mask = 1, .end_mask = 5, .new_axis_mask = 2})
            .shape() == Shape({2, 1, 2, 4}));
  // x[-1, -2:, ::-2]
  ExpectEqual(slice({.begin = {-1, -2, 0}, .end = {0, 0, 0}, .strides = {1, 1, -2}, .begin_mask = 4, .end_mask = 6,
                     .shrink_axis_mask = 1}),
              Tensor::FromVector<double>({19, 17, 23, 21}, {2, 2}));
  // x[0:100, -100:2]: clamped
  CHECK(slice({.begin = {0, -100}, .end = {100, 2}, .strides = {1, 1}}).shape() == Shape({2, 2, 4}));
  // x[1, 2, 3]: a scalar
  ExpectEqual(slice({.begin = {1, 2, 3}, .end = {0, 0, 0}, .strides = {1, 1, 1}, .shrink_axis_mask = 7}),
              Tensor::Scalar(23.0));
}

TEST_CASE("StridedSlice infers what it can from unknown spec values", "[array]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DType::kFloat32, {2, 3, 4});
  auto begin = ops::Placeholder(s, DType::kInt32, {2});
  // x[b0, b1:] with b fed: the implicit ellipsis keeps dim 2 whole; dim 0 is shrunk.
  auto y = ops::StridedSlice(s, x, begin, {0, 0}, {1, 1},
                             {.end_mask = 2, .ellipsis_mask = 0, .shrink_axis_mask = 1});
  CHECK(y.shape() == Shape({-1, 4}));
  auto z = ops::StridedSlice(s, x, ops::Placeholder(s, DType::kInt32, {3}), {0, 0, 0}, {1, 1, 1},
                             {.ellipsis_mask = 2, .shrink_axis_mask = 1});
  CHECK(z.shape() == Shape({3, -1}));
  Session session(s);
  Tensor value = Sample({2, 3, 4}, 1).CastTo(DType::kFloat32);
  Tensor out = session.Run({{x, value}, {begin, Int32s({1, 2})}}, {y})[0];
  CHECK(out.shape() == Shape({1, 4}));
}

TEST_CASE("StridedSlice rejects bad specs", "[array]") {
  Tensor x = Sample({2, 3}, 1);
  for (bool as_const : {true, false}) {
    auto run = [&](SliceSpec spec) { RunStridedSlice(x, spec, as_const); };
    ExpectError([&] { run({.begin = {5}, .end = {6}, .strides = {1}, .shrink_axis_mask = 1}); }, Code::kInvalidArgument,
                "index 5 is out of bounds for dimension 0 of size 2");
    ExpectError([&] { run({.begin = {0}, .end = {1}, .strides = {0}}); }, Code::kInvalidArgument, "zero stride");
    ExpectError([&] { run({.begin = {0, 0}, .end = {1, 1}, .strides = {1, 1}, .ellipsis_mask = 3}); },
                Code::kInvalidArgument, "only one ellipsis");
    ExpectError([&] { run({.begin = {0, 0, 0}, .end = {1, 1, 1}, .strides = {1, 1, 1}}); }, Code::kInvalidArgument,
                "more indices (3) than the input has dimensions (2)");
  }
  ExpectError([&] { RunOp({.op = "StridedSlice", .inputs = {x, Int32s({0}), Int32s({1, 1}), Int32s({1})}, .attrs = {}}); },
              Code::kInvalidArgument, "begin, end and strides must have the same length");
}

TEST_CASE("StridedSliceGrad matches a naive reference on random specs with every mask", "[array]") {
  std::mt19937_64 rng(13);
  int checked = 0, negative = 0, masked = 0;
  for (int trial = 0; checked < 150 && trial < 2000; ++trial) {
    Shape shape = RandomShape(rng, 0, 4, 5);
    SliceSpec spec = RandomSpec(rng, shape.rank());
    Tensor positions = Tensor::Zeros(DType::kFloat64, shape);
    std::optional<Tensor> slice = ReferenceStridedSlice(positions, spec);
    if (!slice) continue;
    Tensor dy = Sample(slice->shape(), trial);
    Tensor expected = *ReferenceStridedSliceGrad(shape, spec, dy);
    DType dtype = kMoveTypes[checked % kMoveTypes.size()];
    INFO(shape.ToString() << " begin " << array::IntsString(spec.begin) << " end " << array::IntsString(spec.end)
         << " strides " << array::IntsString(spec.strides) << " masks b" << spec.begin_mask << " e" << spec.end_mask
         << " ...=" << spec.ellipsis_mask << " new" << spec.new_axis_mask << " shrink" << spec.shrink_axis_mask);
    ExpectEqual(RunStridedSliceGrad(shape, spec, dy.CastTo(dtype), checked % 2), expected.CastTo(dtype));
    for (int64_t stride : spec.strides) negative += stride < 0;
    masked += spec.ellipsis_mask != 0 && spec.new_axis_mask != 0 && spec.shrink_axis_mask != 0;
    ++checked;
  }
  CHECK(checked == 150);
  CHECK(negative > 20);
  CHECK(masked > 3);
}

TEST_CASE("StridedSliceGrad scatters the usual index expressions", "[array]") {
  // x[-1, ..., newaxis, ::-2] of a [2, 3, 4] tensor: dy is [3, 1, 2].
  SliceSpec spec{.begin = {-1, 0, 0, 0}, .end = {0, 0, 0, 0}, .strides = {1, 1, 1, -2},
                 .begin_mask = 8, .end_mask = 8, .ellipsis_mask = 2, .new_axis_mask = 4, .shrink_axis_mask = 1};
  Tensor dy = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {3, 1, 2});
  Tensor expected = Generate({2, 3, 4}, [](const std::vector<int64_t>& i) {
    if (i[0] != 1 || i[2] % 2 == 0) return 0.0;
    return double(i[1] * 2 + (i[2] == 3 ? 1 : 2));  // x[1, j, 3] gets dy[j, 0, 0], x[1, j, 1] dy[j, 0, 1]
  });
  for (bool as_const : {true, false}) ExpectEqual(RunStridedSliceGrad({2, 3, 4}, spec, dy, as_const), expected);
  // Every element read, in order: dy is passed through in the new shape.
  SliceSpec all{.begin = {0}, .end = {0}, .strides = {1}, .begin_mask = 1, .end_mask = 1};
  Tensor x = Sample({3, 2}, 4);
  ExpectEqual(RunStridedSliceGrad({3, 2}, all, x, false), x);
  ExpectError([&] { RunStridedSliceGrad({2, 3, 4}, spec, Sample({3, 2}, 1), false); }, Code::kInvalidArgument,
              "dy has shape [3,2] but the slice of a tensor of shape [2,3,4] has shape [3,1,2]");
}

TEST_CASE("GatherV2 matches a naive reference", "[array]") {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 60; ++trial) {
    Shape params_shape = RandomShape(rng, 1, 4);
    int rank = params_shape.rank();
    int64_t axis = Uniform(rng, -rank, rank - 1);
    int a = static_cast<int>(axis < 0 ? axis + rank : axis);
    int batch_dims = a >= 1 && trial % 3 == 0 ? 1 : 0;
    Shape indices_shape = RandomShape(rng, 0, 2, 3);
    if (batch_dims) indices_shape = Shape({params_shape.dim(0), Uniform(rng, 0, 3)});
    int64_t n = params_shape.dim(a);
    if (n == 0 && indices_shape.NumElements() > 0) params_shape.set_dim(a, n = 2);
    DType index_type = trial % 2 ? DType::kInt32 : DType::kInt64;
    Tensor indices = RandomTensor(DType::kInt64, indices_shape, trial, 0, std::max<int64_t>(n - 1, 0)).CastTo(index_type);
    Tensor params = Sample(params_shape, trial);
    Shape out_shape;
    for (int d = 0; d < a; ++d) out_shape.AddDim(params_shape.dim(d));
    for (int d = batch_dims; d < indices_shape.rank(); ++d) out_shape.AddDim(indices_shape.dim(d));
    for (int d = a + 1; d < rank; ++d) out_shape.AddDim(params_shape.dim(d));
    Tensor expected = Generate(out_shape, [&](const std::vector<int64_t>& index) {
      std::vector<int64_t> which(index.begin(), index.begin() + batch_dims);  // indices' own index
      which.insert(which.end(), index.begin() + a, index.begin() + a + indices_shape.rank() - batch_dims);
      std::vector<int64_t> source(index.begin(), index.begin() + a);
      source.push_back(static_cast<int64_t>(ReadAsDouble(indices, Ravel(which, indices_shape))));
      source.insert(source.end(), index.begin() + a + indices_shape.rank() - batch_dims, index.end());
      return At(params, source);
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(params_shape.ToString() << " indices " << indices_shape.ToString() << " axis " << axis << " batch_dims " << batch_dims);
    ExpectEqual(RunOp1({.op = "GatherV2", .inputs = {params.CastTo(dtype), indices, Tensor::Scalar<int32_t>(axis)},
                        .attrs = {{"batch_dims", int64_t{batch_dims}}}, .const_inputs = ConstIf(trial % 2, {2})}),
                expected.CastTo(dtype));
  }
}

TEST_CASE("GatherV2 reports an index out of range, never crashes", "[array]") {
  Tensor params = Sample({5, 2}, 1);
  for (bool as_const : {true, false}) {
    auto gather = [&](Tensor indices, int axis) {
      RunOp({.op = "GatherV2", .inputs = {params, indices, Tensor::Scalar<int32_t>(axis)}, .const_inputs = ConstIf(as_const, {1, 2})});
    };
    ExpectError([&] { gather(Int32s({0, 7, 1}), 0); }, Code::kOutOfRange,
                "indices[1] = 7 is out of range: params [5,2] has 5 entries along axis 0, so valid indices are [0, 5)");
    ExpectError([&] { gather(Int64s({1, -1}).Reshaped({2, 1}), -1); }, Code::kOutOfRange,
                "indices[1,0] = -1 is out of range: params [5,2] has 2 entries along axis 1, so valid indices are [0, 2)");
    ExpectError([&] { gather(Int64s({int64_t{1} << 40}), 0); }, Code::kOutOfRange, "= 1099511627776 is out of range");
    ExpectError([&] { gather(Int32s({0}), 2); }, Code::kInvalidArgument, "axis 2 is out of range for a tensor of rank 2");
  }
  ExpectError([&] { RunOp({.op = "GatherV2", .inputs = {params, Int32s({0, 1, 2}), Tensor::Scalar<int32_t>(1)},
                           .attrs = {{"batch_dims", int64_t{1}}}}); },
              Code::kInvalidArgument, "differ in batch dimension 0");
}

TEST_CASE("UnsortedSegmentSum matches a naive reference", "[array]") {
  std::mt19937_64 rng(14);
  const DType types[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};
  for (int trial = 0; trial < 40; ++trial) {
    Shape data_shape = RandomShape(rng, 1, 3, 5);
    int k = static_cast<int>(Uniform(rng, 1, data_shape.rank()));
    Shape ids_shape(std::vector<int64_t>(data_shape.dims().begin(), data_shape.dims().begin() + k));
    int64_t num = Uniform(rng, 0, 5);
    Tensor ids = RandomTensor(DType::kInt64, ids_shape, trial, -2, num - 1).CastTo(trial % 2 ? DType::kInt32 : DType::kInt64);
    Tensor data = Sample(data_shape, trial);
    std::vector<int64_t> out_dims{num};
    out_dims.insert(out_dims.end(), data_shape.dims().begin() + k, data_shape.dims().end());
    Tensor expected = Tensor::Zeros(DType::kFloat64, Shape(out_dims));
    int64_t inner = expected.NumElements() / std::max<int64_t>(num, 1);
    for (int64_t r = 0; r < ids.NumElements(); ++r) {
      int64_t id = static_cast<int64_t>(ReadAsDouble(ids, r));
      if (id < 0) continue;
      for (int64_t c = 0; c < inner; ++c) expected.data<double>()[id * inner + c] += data.data<double>()[r * inner + c];
    }
    DType dtype = types[trial % 4];
    INFO(data_shape.ToString() << " ids " << ids_shape.ToString() << " num " << num);
    ExpectEqual(RunOp1({.op = "UnsortedSegmentSum", .inputs = {data.CastTo(dtype), ids, Tensor::Scalar<int32_t>(num)},
                        .const_inputs = ConstIf(trial % 2, {2})}),
                expected.CastTo(dtype));
  }
  Tensor data = Sample({4, 2}, 1);
  for (bool as_const : {true, false}) {
    ExpectError([&] { RunOp({.op = "UnsortedSegmentSum", .inputs = {data, Int32s({0, -1, 5, 1}), Tensor::Scalar<int32_t>(4)},
                             .const_inputs = ConstIf(as_const, {1, 2})}); },
                Code::kOutOfRange, "segment_ids[2] = 5 is out of range [0, 4)");
    ExpectError([&] { RunOp({.op = "UnsortedSegmentSum", .inputs = {data, Int32s({0, 1, 2}), Tensor::Scalar<int32_t>(4)},
                             .const_inputs = ConstIf(as_const, {1, 2})}); },
                Code::kInvalidArgument, "segment_ids shape [3] must be a prefix of data shape [4,2]");
  }
}

TEST_CASE("OneHot matches a naive reference", "[array]") {
  std::mt19937_64 rng(15);
  for (int trial = 0; trial < 40; ++trial) {
    Shape shape = RandomShape(rng, 0, 3);
    int64_t depth = Uniform(rng, 0, 4);
    int64_t axis = Uniform(rng, -1, shape.rank());
    DType index_type = trial % 3 == 0 ? DType::kUInt8 : trial % 3 == 1 ? DType::kInt32 : DType::kInt64;
    Tensor indices = RandomTensor(DType::kInt64, shape, trial, index_type == DType::kUInt8 ? 0 : -1, depth)
                         .CastTo(index_type);
    double on = static_cast<double>(Uniform(rng, 1, 9)), off = static_cast<double>(Uniform(rng, -9, 0));
    int a = static_cast<int>(axis == -1 ? shape.rank() : axis);
    std::vector<int64_t> out_dims = shape.dims();
    out_dims.insert(out_dims.begin() + a, depth);
    Tensor expected = Generate(Shape(out_dims), [&](std::vector<int64_t> index) {
      int64_t position = index[a];
      index.erase(index.begin() + a);
      return ReadAsDouble(indices, Ravel(index, shape)) == position ? on : off;
    });
    DType dtype = kMoveTypes[trial % kMoveTypes.size()];
    INFO(shape.ToString() << " depth " << depth << " axis " << axis);
    ExpectEqual(RunOp1({.op = "OneHot", .inputs = {indices, Tensor::Scalar<int32_t>(depth), Tensor::Scalar(on).CastTo(dtype),
                                                    Tensor::Scalar(off).CastTo(dtype)},
                        .attrs = {{"axis", axis}}, .const_inputs = ConstIf(trial % 2, {1})}),
                expected.CastTo(dtype));
  }
  Tensor indices = Int32s({0, 1});
  ExpectError([&] { RunOp({.op = "OneHot", .inputs = {indices, Tensor::Scalar<int32_t>(3), Tensor::Scalar(1.0f), Tensor::Scalar(0.0f)},
                           .attrs = {{"axis", int64_t{2}}}}); },
              Code::kInvalidArgument, "axis 2 is out of range for indices of rank 1");
  for (bool as_const : {true, false})
    ExpectError([&] { RunOp({.op = "OneHot", .inputs = {indices, Tensor::Scalar<int32_t>(-1), Tensor::Scalar(1.0f), Tensor::Scalar(0.0f)},
                             .const_inputs = ConstIf(as_const, {1})}); },
                Code::kInvalidArgument, "depth must be non-negative, got -1");
  // Builder: a literal on/off value takes the dtype of the other.
  Scope s = Scope::NewRootScope();
  auto y = ops::OneHot(s, ops::Placeholder(s, DType::kInt64, {3}), 4, ops::Const(s, 2.0), 0);
  CHECK(y.dtype() == DType::kFloat64);
  CHECK(y.shape() == Shape({3, 4}));
}

TEST_CASE("array kernels agree with the references on inputs big enough to split across threads", "[array]") {
  Tensor x = Sample({300, 257}, 1);
  auto at = [&](int64_t i, int64_t j) { return x.data<double>()[i * 257 + j]; };
  ExpectEqual(RunOp1({.op = "Transpose", .inputs = {x, Int32s({1, 0})}}),
              Generate({257, 300}, [&](const auto& i) { return at(i[1], i[0]); }));
  // x[::-1, 1::2]
  SliceSpec reverse{.begin = {0, 1}, .end = {0, 0}, .strides = {-1, 2}, .begin_mask = 1, .end_mask = 3};
  ExpectEqual(RunStridedSlice(x, reverse, true), Generate({300, 128}, [&](const auto& i) { return at(299 - i[0], 1 + 2 * i[1]); }));
  ExpectEqual(RunOp1({.op = "Tile", .inputs = {x, Int32s({2, 3})}}),
              Generate({600, 771}, [&](const auto& i) { return at(i[0] % 300, i[1] % 257); }));
  ExpectEqual(RunOp1({.op = "Pad", .inputs = {x, Int32s({1, 2, 3, 4}).Reshaped({2, 2})}}),
              Generate({303, 264}, [&](const auto& i) {
                bool inside = i[0] >= 1 && i[0] < 301 && i[1] >= 3 && i[1] < 260;
                return inside ? at(i[0] - 1, i[1] - 3) : 0.0;
              }));
  ExpectEqual(RunOp1({.op = "ConcatV2", .inputs = {x, x, Tensor::Scalar<int32_t>(1)}}),
              Generate({300, 514}, [&](const auto& i) { return at(i[0], i[1] % 257); }));
  Tensor indices = RandomTensor(DType::kInt32, {4000}, 2, 0, 299);
  ExpectEqual(RunOp1({.op = "GatherV2", .inputs = {x, indices, Tensor::Scalar<int32_t>(0)}}),
              Generate({4000, 257}, [&](const auto& i) { return at(indices.data<int32_t>()[i[0]], i[1]); }));
  Tensor wide = Sample({4, 30000}, 3);
  ExpectEqual(RunOp1({.op = "UnsortedSegmentSum", .inputs = {wide, Int32s({1, -1, 1, 0}), Tensor::Scalar<int32_t>(2)}}),
              Generate({2, 30000}, [&](const auto& i) {
                const double* w = wide.data<double>();
                return i[0] == 0 ? w[3 * 30000 + i[1]] : w[i[1]] + w[2 * 30000 + i[1]];
              }));
}
