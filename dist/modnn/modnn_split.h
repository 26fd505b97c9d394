// MoDNN's Biased One-Dimensional Partition (its thesis, section 2.2.3) as a
// graph rewrite: one convolution layer split into k strips along the longer
// spatial side of its output, each strip on its own device, sized by speed.
//
// The layer is a Conv2D, followed (when each is the previous one's only use)
// by a BiasAdd, a Relu or Relu6, and a MaxPool or AvgPool. The chain's final
// output rows (columns, when the output is wider than tall) are shared out in
// proportion to the devices' speeds; each strip then reads back through the
// chain only the rows it needs:
//
//   pool output rows [a, b)  <- conv rows  [a*ps - pp, (b-1)*ps - pp + pk)   clipped to the conv
//   conv output rows [c, d)  <- input rows [c*s - pt, (d-1)*s - pt + (k-1)*dil + 1)
//
// (pp, pt: the pool's and the conv's padding before the first row.) Rows
// outside the input are the image's zero padding: the strip's conv adds them
// itself (padding EXPLICIT), so every strip computes exactly the values the
// whole layer computes there. The strip's pool is EXPLICIT too, padded only
// where its windows overhang the image: each window covers the same real
// elements as in the whole layer, so a MaxPool's max and an AvgPool's mean
// (the sum over the real elements / their count) are bit-identical. The
// rows a strip reads beyond its neighbour's are its halo. The strips are
// joined with a ConcatV2 that takes the name of the chain's last node, so
// fetches and consumers keep working.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dflow::dist {

struct StripDevice {
  std::string device;  // the device the strip requests
  double speed = 1;    // relative speed: work done per second (any unit)
};

struct ModnnSplitOptions {
  std::vector<StripDevice> strips;  // k strips, first = top (or left)
  // MoDNN's group owner: where the input is sliced and the strips joined.
  // Empty: the placer decides.
  std::string owner_device;
  bool include_pooling = true;  // absorb a following MaxPool / AvgPool
};

// One strip, in rows along the split axis (columns when axis is 2).
struct StripPlan {
  std::string device;
  int64_t out_begin = 0, out_end = 0;    // rows of the chain's final output
  int64_t conv_begin = 0, conv_end = 0;  // rows of the conv's output it computes
  int64_t in_begin = 0, in_end = 0;      // rows of the conv's input it reads
  int64_t pad_before = 0, pad_after = 0;  // zero rows its conv adds (the image's padding)
  // Rows outside the image that the strip's pool windows reach (its EXPLICIT
  // pool pads on the split axis; rows across a cut are real, the halo).
  int64_t pool_pad_before = 0, pool_pad_after = 0;
};

struct ModnnSplitPlan {
  std::string conv;                   // the Conv2D's name
  std::vector<std::string> absorbed;  // the BiasAdd / activation / pool that follow it
  std::string output;                 // the chain's last node (the join's name)
  int axis = 1;                       // 1: split rows (height), 2: columns (width)
  std::vector<StripPlan> strips;
  // The other spatial axis is not split: every strip keeps the layer's
  // (before, after) padding there, for the conv and the pool.
  int64_t conv_cross_pad[2] = {0, 0};
  int64_t pool_cross_pad[2] = {0, 0};
};

// Rows per strip, in proportion to `speeds` (largest remainder, every strip
// at least one row). Throws kInvalidArgument when there are more strips
// than rows or a speed is not a positive finite number.
std::vector<int64_t> StripSizes(int64_t rows, const std::vector<double>& speeds);

// Speeds from measured times of the same work: speed = 1 / milliseconds.
std::vector<double> SpeedsFromMilliseconds(const std::vector<double>& milliseconds);

// What ModnnSplit would do to the Conv2D named `conv`, without changing the
// graph. Throws kInvalidArgument naming the node and the reason when the
// split is impossible (not a Conv2D, unknown height or width, more strips
// than rows, a strip that would read only padding, a device left empty).
ModnnSplitPlan PlanModnnSplit(const Graph& graph, const std::string& conv,
                              const ModnnSplitOptions& options);

// Rewrites the graph as planned: k strip chains on their devices, the input
// sliced (with halos) on the owner, the strips joined there.
ModnnSplitPlan ModnnSplit(Graph& graph, const std::string& conv, const ModnnSplitOptions& options);

// One line per strip: "strip 1 on DEVICE: output rows [3, 4) <- conv [6, 8)
// <- input [5, 8) + 1 padding after; halo [5, 7), also read by strip 0".
std::string ModnnSplitPlanToText(const ModnnSplitPlan& plan);

}  // namespace dflow::dist
