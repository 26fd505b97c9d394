// Model parallelism by part, as TensorFlow's `with tf.device(...)` around
// each part of a network: the devices that a detector's backbone, its extra
// layers (SSD's extras, RetinaNet's feature pyramid) and its heads request.
// Their gradients follow them (autodiff colocates each gradient with its
// forward op), the optimizer's updates follow the variables, and placement
// and partitioning put Send/Recv pairs where a tensor crosses from one
// device to another: nothing else in the graph knows it is split.
#pragma once

#include <string>

#include "graph/scope.h"

namespace dflow::models {

struct ModelPartDevices {
  // Full or partial device names ("/job:part/task:1"); empty: no request.
  std::string backbone, extras, heads;
};

// `scope` asking for `device`, or `scope` unchanged when `device` is empty
// (an outer request, if any, stays).
inline Scope OnDevice(const Scope& scope, const std::string& device) {
  return device.empty() ? scope : scope.WithDevice(device);
}

}  // namespace dflow::models
