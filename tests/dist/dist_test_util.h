// Device lists and small graphs shared by the dist tests.
#pragma once

#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow::testing {

inline const std::string kPs = "/job:ps/replica:0/task:0/device:CPU:0";
inline const std::string kWorker0 = "/job:worker/replica:0/task:0/device:CPU:0";
inline const std::string kWorker1 = "/job:worker/replica:0/task:1/device:CPU:0";
inline const std::vector<std::string> kTwoWorkers = {kWorker0, kWorker1};
inline const std::vector<std::string> kPsAndWorkers = {kPs, kWorker0, kWorker1};
// Two CPU devices of this process (SessionOptions::devices).
inline const std::string kLocalCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
inline const std::string kLocalCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";

// A float32 constant of zeros, named, of the given shape.
inline Output ZerosConst(const Scope& scope, const std::string& name, Shape shape) {
  return scope.WithOpName(name).AddOp(
      "Const", {}, {{"value", Tensor::Zeros(DType::kFloat32, shape)}, {"dtype", DType::kFloat32}});
}

}  // namespace dflow::testing
