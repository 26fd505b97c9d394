// A density map drawn over its image, for people to see what was counted.
#pragma once

#include "graph/tensor.h"

namespace dflow::count_app {

// uint8 [H, W, 3]: the image darkened and greyed, with the density map
// (float32 [H, W]) laid over it in a black-red-yellow-white ramp whose
// opacity grows with the density; the ramp spans [0, max(map)]. The count
// (the map's sum) is written at the top left and, on images of at least
// 64x64, the ramp is drawn as a legend down the right edge, its top labelled
// with max(map) per pixel.
Tensor DensityOverlay(const Tensor& image, const Tensor& density);

}  // namespace dflow::count_app
