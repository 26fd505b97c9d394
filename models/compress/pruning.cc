// Pruning; see pruning.h.
#include "models/compress/pruning.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "graph/status.h"

namespace dflow::models {
namespace {

void CheckSparsity(double sparsity, const char* what) {
  DFLOW_REQUIRE(sparsity >= 0 && sparsity <= 1, what, ": the sparsity must be in [0, 1], got ", sparsity);
}

void CheckFloat(const std::string& name, const Tensor& t, const char* what) {
  DFLOW_REQUIRE(t.dtype() == DType::kFloat32, what, ": \"", name, "\" is ", DTypeName(t.dtype()),
                ", not float32");
}

// A weight's place among all the pruned tensors' weights.
struct WeightRef {
  float magnitude;
  size_t tensor;
  int64_t index;
  auto key() const { return std::tie(magnitude, tensor, index); }
};

// Zeroes, in the masks, the `count` weights of smallest magnitude (then
// earliest tensor, then position) among `refs`.
void PruneSmallest(std::vector<WeightRef>& refs, int64_t count, std::vector<Tensor*>& masks) {
  if (count <= 0) return;
  auto smaller = [](const WeightRef& a, const WeightRef& b) { return a.key() < b.key(); };
  if (count < static_cast<int64_t>(refs.size()))
    std::nth_element(refs.begin(), refs.begin() + count - 1, refs.end(), smaller);
  for (int64_t i = 0; i < count; ++i) masks[refs[i].tensor]->data<float>()[refs[i].index] = 0;
}

std::vector<WeightRef> Magnitudes(const Tensor& t, size_t tensor) {
  std::vector<WeightRef> refs(static_cast<size_t>(t.NumElements()));
  const float* w = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) refs[static_cast<size_t>(i)] = {std::fabs(w[i]), tensor, i};
  return refs;
}

int64_t PrunedCount(double sparsity, size_t n) { return std::llround(sparsity * static_cast<double>(n)); }

// The sizes of `t` before, at and after `axis`: t is [outer, dim, inner].
struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
};
AxisSplit SplitAt(const Shape& shape, int axis) {
  AxisSplit s;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < axis) s.outer *= shape.dim(i);
    if (i > axis) s.inner *= shape.dim(i);
  }
  s.dim = shape.dim(axis);
  return s;
}

// Per channel along `axis`: the sum of |value| over the other axes.
std::vector<double> ChannelL1(const Tensor& t, int axis) {
  const AxisSplit s = SplitAt(t.shape(), axis);
  std::vector<double> sums(static_cast<size_t>(s.dim), 0.0);
  const float* v = t.data<float>();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.dim; ++c)
      for (int64_t i = 0; i < s.inner; ++i) sums[static_cast<size_t>(c)] += std::fabs(v[(o * s.dim + c) * s.inner + i]);
  return sums;
}

const Tensor& Find(const TensorsByName& variables, const std::string& name, const std::string& layer) {
  auto it = variables.find(name);
  if (it == variables.end())
    Fail(Code::kInvalidArgument, "channel pruning: the layer \"", layer, "\" names the variable \"", name,
         "\", which the model does not have");
  return it->second;
}

// The importance slice spans its layer's whole axis.
void CheckAxis(const Tensor& t, const ChannelSlice& slice, const ChannelGroup& group) {
  DFLOW_REQUIRE(slice.axis >= 0 && slice.axis < t.shape().rank() && t.shape().dim(slice.axis) == group.channels,
                "channel pruning: the layer \"", group.layer, "\" has ", group.channels, " channels but \"",
                slice.variable, "\" is ", t.shape().ToString(), " (axis ", slice.axis, ")");
}

// A pruned slice lies inside its axis: offset + channels <= the axis' size.
void CheckSlice(const Tensor& t, const ChannelSlice& slice, const ChannelGroup& group) {
  DFLOW_REQUIRE(slice.axis >= 0 && slice.axis < t.shape().rank() && slice.offset >= 0 &&
                    slice.offset + group.channels <= t.shape().dim(slice.axis),
                "channel pruning: the layer \"", group.layer, "\" has ", group.channels, " channels (from index ",
                slice.offset, ") but \"", slice.variable, "\" is ", t.shape().ToString(), " (axis ", slice.axis, ")");
}

// One axis of one variable: which of its indices survive, and which
// group's slice each belongs to (the slices of an axis must tile it).
struct AxisCut {
  std::vector<bool> keep;
  std::vector<bool> owned;
};

}  // namespace

TensorsByName L1UnstructuredMasks(const TensorsByName& weights, double sparsity, PruneScope scope) {
  CheckSparsity(sparsity, "L1 unstructured pruning");
  TensorsByName masks;
  std::vector<Tensor*> mask_of;
  std::vector<const Tensor*> weight_of;
  for (const auto& [name, w] : weights) {
    CheckFloat(name, w, "L1 unstructured pruning");
    Tensor mask(DType::kFloat32, w.shape());
    std::fill_n(mask.data<float>(), mask.NumElements(), 1.0f);
    mask_of.push_back(&(masks[name] = std::move(mask)));
    weight_of.push_back(&w);
  }
  if (scope == PruneScope::kPerLayer) {
    for (size_t t = 0; t < weight_of.size(); ++t) {
      std::vector<WeightRef> refs = Magnitudes(*weight_of[t], t);
      PruneSmallest(refs, PrunedCount(sparsity, refs.size()), mask_of);
    }
    return masks;
  }
  std::vector<WeightRef> all;
  for (size_t t = 0; t < weight_of.size(); ++t) {
    std::vector<WeightRef> refs = Magnitudes(*weight_of[t], t);
    all.insert(all.end(), refs.begin(), refs.end());
  }
  PruneSmallest(all, PrunedCount(sparsity, all.size()), mask_of);
  return masks;
}

Tensor ApplyMask(const Tensor& weights, const Tensor& mask) {
  DFLOW_REQUIRE(weights.shape() == mask.shape() && weights.dtype() == DType::kFloat32 &&
                    mask.dtype() == DType::kFloat32,
                "ApplyMask: weights ", weights.shape().ToString(), " and mask ", mask.shape().ToString(),
                " must be float32 of one shape");
  Tensor out = weights.Clone();
  float* w = out.data<float>();
  const float* m = mask.data<float>();
  for (int64_t i = 0; i < out.NumElements(); ++i) w[i] *= m[i];
  return out;
}

int64_t LayerChannels(const std::map<std::string, int64_t>& channels, const std::string& layer, int64_t otherwise) {
  auto it = channels.find(layer);
  return it != channels.end() ? it->second : otherwise;
}

std::map<std::string, int64_t> ChannelsUnder(const std::map<std::string, int64_t>& channels, const std::string& prefix,
                                             std::map<std::string, int64_t>& rest) {
  std::map<std::string, int64_t> part;
  for (const auto& [name, count] : channels) {
    if (name.starts_with(prefix))
      part[name.substr(prefix.size())] = count;
    else
      rest[name] = count;
  }
  return part;
}

void CheckLayerChannels(const std::map<std::string, int64_t>& channels, const std::vector<std::string>& layers,
                        const std::string& network) {
  for (const auto& [name, count] : channels) {
    DFLOW_REQUIRE(std::find(layers.begin(), layers.end(), name) != layers.end(), network, ": no layer \"", name,
                  "\" whose channels can be set");
    DFLOW_REQUIRE(count >= 1, network, ": the layer \"", name, "\" needs at least 1 channel, got ", count);
  }
}

std::vector<ChannelSlice> OwnChannelSlices(const std::string& layer, bool batch_norm) {
  std::vector<ChannelSlice> slices{{layer + "/filter", 3}};
  if (!batch_norm) slices.push_back({layer + "/bias", 0});
  for (const char* v : {"gamma", "beta", "moving_mean", "moving_variance"})
    if (batch_norm) slices.push_back({layer + "/" + v, 0});
  return slices;
}

void PrefixVariables(std::vector<ChannelGroup>& groups, const std::string& prefix) {
  for (ChannelGroup& g : groups) {
    g.importance.variable = prefix + g.importance.variable;
    for (ChannelSlice& slice : g.slices) slice.variable = prefix + slice.variable;
  }
}

std::map<std::string, std::vector<int64_t>> ChooseChannels(const std::vector<ChannelGroup>& groups,
                                                           const TensorsByName& variables, double sparsity) {
  CheckSparsity(sparsity, "channel pruning");
  std::map<std::string, std::vector<int64_t>> kept;
  for (const ChannelGroup& g : groups) {
    const Tensor& t = Find(variables, g.importance.variable, g.layer);
    CheckFloat(g.importance.variable, t, "channel pruning");
    CheckAxis(t, g.importance, g);
    const std::vector<double> importance = ChannelL1(t, g.importance.axis);
    std::vector<int64_t> order(static_cast<size_t>(g.channels));
    std::iota(order.begin(), order.end(), 0);
    // Most important first; stable, so equal importance keeps the lower index.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return importance[static_cast<size_t>(a)] > importance[static_cast<size_t>(b)];
    });
    const int64_t keep =
        std::max<int64_t>(1, std::llround((1 - sparsity) * static_cast<double>(g.channels)));
    order.resize(static_cast<size_t>(keep));
    std::sort(order.begin(), order.end());
    kept[g.layer] = std::move(order);
  }
  return kept;
}

Tensor KeepChannels(const Tensor& t, int axis, std::span<const int64_t> kept) {
  DFLOW_REQUIRE(axis >= 0 && axis < t.shape().rank(), "KeepChannels: axis ", axis, " of a ",
                t.shape().ToString(), " tensor");
  const AxisSplit s = SplitAt(t.shape(), axis);
  for (int64_t c : kept)
    DFLOW_REQUIRE(c >= 0 && c < s.dim, "KeepChannels: channel ", c, " of ", s.dim);
  Shape shape = t.shape();
  shape.set_dim(axis, static_cast<int64_t>(kept.size()));
  Tensor out(t.dtype(), shape);
  const size_t bytes = DTypeSize(t.dtype()) * static_cast<size_t>(s.inner);
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c : kept) {
      std::copy_n(src + static_cast<size_t>(o * s.dim + c) * bytes, bytes, dst);
      dst += bytes;
    }
  return out;
}

TensorsByName PruneChannels(const std::vector<ChannelGroup>& groups,
                            const std::map<std::string, std::vector<int64_t>>& kept, TensorsByName variables) {
  // Every cut is decided on the unpruned shapes, then applied once per axis:
  // a variable may be cut along several axes (a pointwise filter: its inputs
  // and outputs) and one axis by several groups (a concatenation's parts).
  for (const ChannelGroup& g : groups)
    for (const ChannelSlice& slice : g.slices) CheckSlice(Find(variables, slice.variable, g.layer), slice, g);
  std::map<std::pair<std::string, int>, AxisCut> cuts;
  for (const ChannelGroup& g : groups) {
    auto k = kept.find(g.layer);
    DFLOW_REQUIRE(k != kept.end(), "channel pruning: no channels chosen for the layer \"", g.layer, "\"");
    for (const ChannelSlice& slice : g.slices) {
      const Tensor& t = variables.at(slice.variable);
      AxisCut& cut = cuts[{slice.variable, slice.axis}];
      const auto size = static_cast<size_t>(t.shape().dim(slice.axis));
      if (cut.keep.empty()) cut = {std::vector<bool>(size, false), std::vector<bool>(size, false)};
      for (int64_t c = 0; c < g.channels; ++c) {
        const auto index = static_cast<size_t>(slice.offset + c);
        DFLOW_REQUIRE(!cut.owned[index], "channel pruning: index ", index, " of axis ", slice.axis, " of \"",
                      slice.variable, "\" belongs to two layers' channels (\"", g.layer, "\" and another)");
        cut.owned[index] = true;
        cut.keep[index] = false;
      }
      for (int64_t c : k->second) {
        DFLOW_REQUIRE(c >= 0 && c < g.channels, "channel pruning: the layer \"", g.layer, "\" keeps channel ", c,
                      " of ", g.channels);
        cut.keep[static_cast<size_t>(slice.offset + c)] = true;
      }
    }
  }
  for (const auto& [where, cut] : cuts) {
    const int64_t owned = std::count(cut.owned.begin(), cut.owned.end(), true);
    DFLOW_REQUIRE(owned == static_cast<int64_t>(cut.owned.size()), "channel pruning: axis ", where.second, " of \"",
                  where.first, "\" has ", cut.owned.size(), " indices but the layers cutting it own ", owned);
    std::vector<int64_t> indices;
    for (size_t i = 0; i < cut.keep.size(); ++i)
      if (cut.keep[i]) indices.push_back(static_cast<int64_t>(i));
    Tensor& t = variables.at(where.first);
    t = KeepChannels(t, where.second, indices);
  }
  return variables;
}

}  // namespace dflow::models
