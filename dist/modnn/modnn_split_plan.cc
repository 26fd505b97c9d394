// The arithmetic of MoDNN's split (dist/modnn/modnn_split.h): which chain follows
// the Conv2D, how many output rows each strip gets, and which rows of the
// conv's output and input each strip needs (halos and padding included).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "dist/modnn/modnn_split.h"
#include "ops/conv.h"
#include "ops/pool.h"

namespace dflow::dist {
namespace {

// One spatial axis of a sliding window, in the terms both conv and pool
// share: output row o reads input rows [o*stride - pad_before, ... + window).
struct AxisWindow {
  int64_t in = 0, out = 0, window = 1, stride = 1, pad_before = 0;
  int64_t first_read(int64_t o) const { return o * stride - pad_before; }
  int64_t end_read(int64_t o) const { return o * stride - pad_before + window; }
  // Padding after the last input row that the last window reaches into.
  int64_t pad_after() const { return std::max<int64_t>(end_read(out - 1) - in, 0); }
};

AxisWindow ConvAxis(const ConvGeometry& g, int axis) {
  if (axis == 1)
    return {g.in_h, g.out_h, (g.k_h - 1) * g.dilation_h + 1, g.stride_h, g.pad_top};
  return {g.in_w, g.out_w, (g.k_w - 1) * g.dilation_w + 1, g.stride_w, g.pad_left};
}

AxisWindow PoolAxis(const PoolGeometry& g, int axis) {
  const WindowDim& d = axis == 1 ? g.rows : g.cols;
  return {d.in, d.out, d.size, d.stride, d.pad_before};
}

PoolGeometry PoolGeometryOf(const Node& pool) {
  return MakePoolGeometry(pool.input_shape(0), pool.attr<std::vector<int64_t>>("ksize"),
                          pool.attr<std::vector<int64_t>>("strides"),
                          pool.attr<std::string>("padding"),
                          pool.attr<std::vector<int64_t>>("explicit_paddings"));
}

// The single data use of `node` as input 0 of its consumer, or null.
Node* SoleConsumer(const Node& node, const std::vector<std::vector<Graph::Consumer>>& consumers) {
  const auto& uses = consumers[node.id()];
  return uses.size() == 1 && uses[0].input == 0 ? uses[0].node : nullptr;
}

// Conv2D -> [BiasAdd] -> [Relu | Relu6] -> [MaxPool | AvgPool], each taken
// while it is the only use of the node before it.
std::vector<Node*> MatchChain(const Graph& graph, Node* conv, bool include_pooling) {
  auto consumers = graph.Consumers();
  std::vector<Node*> chain = {conv};
  Node* next = SoleConsumer(*conv, consumers);
  if (next && next->op() == "BiasAdd") {
    chain.push_back(next);
    next = SoleConsumer(*next, consumers);
  }
  if (next && (next->op() == "Relu" || next->op() == "Relu6")) {
    chain.push_back(next);
    next = SoleConsumer(*next, consumers);
  }
  if (include_pooling && next && (next->op() == "MaxPool" || next->op() == "AvgPool"))
    chain.push_back(next);
  return chain;
}

void CheckStrips(const Node& conv, const ModnnSplitOptions& options) {
  if (options.strips.empty())
    Fail(Code::kInvalidArgument, conv.Describe(), ": cannot split into 0 strips: give at least "
         "one strip device");
  for (size_t i = 0; i < options.strips.size(); ++i)
    if (options.strips[i].device.empty())
      Fail(Code::kInvalidArgument, conv.Describe(), ": strip ", i, " has no device");
}

// The conv rows [begin, end) of output rows [a, b) seen through the pool;
// the pool's padding rows (those outside the image) go into the strip's
// pool_pad_*; across a cut the windows reach into real rows (the halo).
void ThroughPool(const AxisWindow& pool, StripPlan& s) {
  int64_t lo = pool.first_read(s.out_begin), hi = pool.end_read(s.out_end - 1);
  s.conv_begin = std::max<int64_t>(lo, 0);
  s.conv_end = std::min(hi, pool.in);
  s.pool_pad_before = s.conv_begin - lo;
  s.pool_pad_after = hi - s.conv_end;
}

void ThroughConv(const Node& conv, const AxisWindow& a, size_t index, StripPlan& s) {
  int64_t lo = a.first_read(s.conv_begin), hi = a.end_read(s.conv_end - 1);
  s.in_begin = std::max<int64_t>(lo, 0);
  s.in_end = std::min(hi, a.in);
  if (s.in_end <= s.in_begin)
    Fail(Code::kInvalidArgument, conv.Describe(), ": strip ", index, " (conv output rows [",
         s.conv_begin, ", ", s.conv_end, ")) would read only padding: use fewer strips");
  s.pad_before = s.in_begin - lo;
  s.pad_after = hi - s.in_end;
}

// The strips' rows: shared by speed, then traced back through the pool
// (when there is one) and the conv.
std::vector<StripPlan> ShareRows(const Node& conv, const ModnnSplitOptions& options, int64_t rows,
                                 const AxisWindow& conv_axis,
                                 const std::optional<AxisWindow>& pool_axis) {
  std::vector<double> speeds;
  for (const StripDevice& s : options.strips) speeds.push_back(s.speed);
  std::vector<int64_t> sizes;
  try {
    sizes = StripSizes(rows, speeds);
  } catch (const Error& e) {
    throw Error(e.code(), conv.Describe() + ": " + e.message());
  }
  std::vector<StripPlan> strips;
  int64_t begin = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    StripPlan s{.device = options.strips[i].device, .out_begin = begin,
                .out_end = begin + sizes[i]};
    begin = s.out_end;
    if (pool_axis) ThroughPool(*pool_axis, s);
    else s.conv_begin = s.out_begin, s.conv_end = s.out_end;
    ThroughConv(conv, conv_axis, i, s);
    strips.push_back(s);
  }
  return strips;
}

}  // namespace

std::vector<int64_t> StripSizes(int64_t rows, const std::vector<double>& speeds) {
  const int64_t k = static_cast<int64_t>(speeds.size());
  if (k == 0) Fail(Code::kInvalidArgument, "no strips: give at least one speed");
  if (k > rows)
    Fail(Code::kInvalidArgument, "cannot split ", rows, " rows into ", k,
         " strips: each strip needs at least one row");
  for (int64_t i = 0; i < k; ++i)
    if (!std::isfinite(speeds[i]) || speeds[i] <= 0)
      Fail(Code::kInvalidArgument, "strip ", i, ": speed must be a positive finite number, got ",
           speeds[i]);
  // One row each, then the rest by largest remainder of each strip's share.
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  const int64_t spare = rows - k;
  std::vector<int64_t> sizes(k, 1);
  std::vector<double> remainder(k);
  int64_t given = 0;
  for (int64_t i = 0; i < k; ++i) {
    double share = spare * speeds[i] / total;
    int64_t whole = static_cast<int64_t>(std::floor(share));
    sizes[i] += whole;
    given += whole;
    remainder[i] = share - whole;
  }
  std::vector<int64_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return remainder[a] > remainder[b]; });
  for (int64_t i = 0; given < spare; ++i, ++given) sizes[order[i % k]] += 1;
  return sizes;
}

std::vector<double> SpeedsFromMilliseconds(const std::vector<double>& milliseconds) {
  std::vector<double> speeds;
  for (size_t i = 0; i < milliseconds.size(); ++i) {
    if (!std::isfinite(milliseconds[i]) || milliseconds[i] <= 0)
      Fail(Code::kInvalidArgument, "strip ", i, ": a measured time must be a positive number "
           "of milliseconds, got ", milliseconds[i]);
    speeds.push_back(1.0 / milliseconds[i]);
  }
  return speeds;
}

ModnnSplitPlan PlanModnnSplit(const Graph& graph, const std::string& conv_name,
                              const ModnnSplitOptions& options) {
  Node& conv = graph.GetNode(conv_name);
  if (conv.op() != "Conv2D")
    Fail(Code::kInvalidArgument, "MoDNN split: ", conv.Describe(), " is not a Conv2D");
  CheckStrips(conv, options);
  ConvGeometry g = MakeConvGeometry(ConvParamsOf(conv), conv.input_shape(0), conv.input_shape(1));
  if (g.in_h < 0 || g.in_w < 0 || g.k_h < 0 || g.k_w < 0)
    Fail(Code::kInvalidArgument, conv.Describe(), ": cannot split without a known height and "
         "width of the input and filter: input ", conv.input_shape(0).ToString(), ", filter ",
         conv.input_shape(1).ToString());

  ModnnSplitPlan plan;
  plan.conv = conv.name();
  std::vector<Node*> chain = MatchChain(graph, &conv, options.include_pooling);
  for (size_t i = 1; i < chain.size(); ++i) plan.absorbed.push_back(chain[i]->name());
  plan.output = chain.back()->name();
  plan.axis = g.out_h >= g.out_w ? 1 : 2;  // the longer side; rows on a tie
  const int cross = 3 - plan.axis;
  AxisWindow conv_axis = ConvAxis(g, plan.axis), conv_cross = ConvAxis(g, cross);
  plan.conv_cross_pad[0] = conv_cross.pad_before;
  plan.conv_cross_pad[1] = conv_cross.pad_after();

  const Node* pool = chain.back()->op() == "MaxPool" || chain.back()->op() == "AvgPool"
                         ? chain.back() : nullptr;
  std::optional<AxisWindow> pool_axis;
  if (pool) {
    PoolGeometry pg = PoolGeometryOf(*pool);
    pool_axis = PoolAxis(pg, plan.axis);
    AxisWindow pool_cross = PoolAxis(pg, cross);
    plan.pool_cross_pad[0] = pool_cross.pad_before;
    plan.pool_cross_pad[1] = pool_cross.pad_after();
  }
  const int64_t rows = pool_axis ? pool_axis->out : conv_axis.out;
  const char* side = plan.axis == 1 ? "rows" : "columns";
  if (static_cast<int64_t>(options.strips.size()) > rows)
    Fail(Code::kInvalidArgument, conv.Describe(), ": cannot split the ", rows, " output ", side,
         " of ", chain.back()->Describe(), " into ", options.strips.size(),
         " strips: each strip needs at least one");

  plan.strips = ShareRows(conv, options, rows, conv_axis, pool_axis);
  return plan;
}

std::string ModnnSplitPlanToText(const ModnnSplitPlan& plan) {
  const char* unit = plan.axis == 1 ? "rows" : "columns";
  auto range = [](int64_t a, int64_t b) { return StrCat("[", a, ", ", b, ")"); };
  auto padding = [&](int64_t n, const char* where) {
    return n == 0 ? std::string() : StrCat(" + ", n, " padding ", where);
  };
  std::string text = StrCat(plan.conv, " split along its ", unit, " into ", plan.strips.size(),
                            " strips, joined as '", plan.output, "'\n");
  for (size_t i = 0; i < plan.strips.size(); ++i) {
    const StripPlan& s = plan.strips[i];
    text += StrCat("strip ", i, " on ", s.device, ": output ", unit, " ",
                   range(s.out_begin, s.out_end), " <- conv ", range(s.conv_begin, s.conv_end),
                   " <- input ", range(s.in_begin, s.in_end), padding(s.pad_before, "before"),
                   padding(s.pad_after, "after"));
    int64_t shared_end = i == 0 ? 0 : plan.strips[i - 1].in_end;
    if (shared_end > s.in_begin)
      text += StrCat("; halo ", range(s.in_begin, shared_end), ", also read by strip ", i - 1);
    text += "\n";
  }
  return text;
}

}  // namespace dflow::dist
