// The detection ops' GPU kernels (ops/cuda/detection.{cc,cu}) against the
// CPU's, bit for bit: NMS indices, scores and boxes are copies of inputs,
// TopKV2's values too, so any difference is a different selection; BoxIou
// within 1e-6. Random boxes with many equal scores, swapped corners and
// empty boxes, about 1k of them. Without a GPU each case is skipped with a
// WARN; the kernel-coverage check still runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "graph/kernel.h"
#include "ops/detection.h"
#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs `run` on every device; each GPU's outputs must equal the CPU's, bit
// for bit, or within `atol` when it is positive.
void ExpectExactOnAllDevices(OpRun run, double atol = 0) {
  std::vector<std::string> devices = TestDevices();
  run.device = devices[0];
  std::vector<Tensor> cpu = RunOp(run);
  if (devices.size() == 1) {
    WARN(run.op << " GPU comparison skipped: no GPU visible (" << DiscoverGpus().reason << ")");
    return;
  }
  for (size_t d = 1; d < devices.size(); ++d) {
    run.device = devices[d];
    std::vector<Tensor> gpu = RunOp(run);
    REQUIRE(gpu.size() == cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      INFO(run.op << " output " << i << " on " << devices[d]);
      ExpectClose(gpu[i], cpu[i], 0, atol);
    }
  }
}

// n boxes [n, 4] of sizes 0.02 to 0.3 in the unit square, clustered so that
// many overlap; every 7th has its corners swapped, every 50th is empty.
Tensor RandomBoxes(int64_t n, uint64_t seed) {
  Tensor u = RandomTensor(DType::kFloat32, Shape{n, 4}, seed, 0, 1);
  const float* r = u.data<float>();
  std::vector<float> boxes(4 * n);
  for (int64_t i = 0; i < n; ++i) {
    float cy = std::floor(r[4 * i] * 8) / 8 + r[4 * i + 1] * 0.1f, cx = r[4 * i + 1];
    float h = 0.02f + 0.28f * r[4 * i + 2], w = 0.02f + 0.28f * r[4 * i + 3];
    if (i % 50 == 3) h = 0;
    float* b = &boxes[4 * i];
    b[0] = cy - h / 2, b[1] = cx - w / 2, b[2] = cy + h / 2, b[3] = cx + w / 2;
    if (i % 7 == 5) std::swap(b[0], b[2]), std::swap(b[1], b[3]);
  }
  return Tensor::FromVector(boxes, Shape{n, 4});
}

// Scores in multiples of 1/32 (many ties), shape `shape`.
Tensor TiedScores(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(DType::kFloat32, shape, seed, 0, 1);
  for (int64_t i = 0; i < t.NumElements(); ++i)
    t.data<float>()[i] = std::floor(t.data<float>()[i] * 32) / 32;
  return t;
}

OpRun Nms(Tensor boxes, Tensor scores, int32_t max_output, float iou, float score_threshold,
          float sigma, bool pad) {
  return {.op = "NonMaxSuppressionV5",
          .inputs = {std::move(boxes), std::move(scores), Tensor::Scalar<int32_t>(max_output),
                     Tensor::Scalar(iou), Tensor::Scalar(score_threshold), Tensor::Scalar(sigma)},
          .attrs = {{"pad_to_max_output_size", pad}}};
}

OpRun Combined(Tensor boxes, Tensor scores, int32_t per_class, int32_t total, float iou,
               float score_threshold, bool pad_per_class, bool clip) {
  return {.op = "CombinedNonMaxSuppression",
          .inputs = {std::move(boxes), std::move(scores), Tensor::Scalar<int32_t>(per_class),
                     Tensor::Scalar<int32_t>(total), Tensor::Scalar(iou),
                     Tensor::Scalar(score_threshold)},
          .attrs = {{"pad_per_class", pad_per_class}, {"clip_boxes", clip}}};
}

}  // namespace

TEST_CASE("cuda: every detection op has a GPU kernel", "[cuda][detection]") {
  if (!KernelRegistry::Global().Has("MatMul", "GPU")) {
    WARN("the detection ops' GPU kernel check skipped: dflow was built without CUDA");
    return;
  }
  Scope s = Scope::NewRootScope();
  Output boxes = ops::Placeholder(s, DType::kFloat32, Shape{8, 4});
  Output scores = ops::Placeholder(s, DType::kFloat32, Shape{8});
  ops::NonMaxSuppressionV5(s, boxes, scores, ops::Const(s, 4), ops::Const(s, 0.5f),
                           ops::Const(s, 0.0f), ops::Const(s, 0.0f));
  Output batch_boxes = ops::Placeholder(s, DType::kFloat32, Shape{2, 8, 1, 4});
  Output batch_scores = ops::Placeholder(s, DType::kFloat32, Shape{2, 8, 3});
  ops::CombinedNonMaxSuppression(s, batch_boxes, batch_scores, ops::Const(s, 4), ops::Const(s, 6),
                                 ops::Const(s, 0.5f), ops::Const(s, 0.0f));
  ops::BoxIou(s, boxes, boxes);
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})
    ops::TopKV2(s, ops::Placeholder(s, dtype, Shape{3, 8}), ops::Const(s, 2));
  CheckGpuKernelsFor(s.graph());
}

TEST_CASE("cuda: NonMaxSuppressionV5 keeps the CPU's boxes", "[cuda][detection]") {
  if (SkipWithoutGpu("the NonMaxSuppressionV5 comparisons")) return;
  Tensor boxes = RandomBoxes(1000, 1);
  Tensor scores = TiedScores(Shape{1000}, 2);
  scores.data<float>()[17] = std::nanf("");
  for (float iou : {0.0f, 0.3f, 0.5f, 0.7f, 1.0f})
    for (int32_t max_output : {0, 1, 50, 1000}) {
      INFO("iou " << iou << ", max_output " << max_output);
      ExpectExactOnAllDevices(Nms(boxes, scores, max_output, iou, -kInf, 0, false));
      ExpectExactOnAllDevices(Nms(boxes, scores, max_output, iou, 0.25f, 0, true));
    }
  // Soft-NMS runs on the host over copied inputs.
  ExpectExactOnAllDevices(Nms(boxes, scores, 200, 0.5f, 0.1f, 0.5f, true));
}

TEST_CASE("cuda: NonMaxSuppressionV5 at the mask's 64-box block edges", "[cuda][detection]") {
  if (SkipWithoutGpu("the the NMS block edges comparisons")) return;
  for (int64_t n : {0, 1, 63, 64, 65, 128, 129}) {
    INFO(n << " boxes");
    Tensor boxes = RandomBoxes(n, 10 + n);
    // Every box the same: only the best survives IoU 0.5, all survive IoU 1.
    Tensor same = Tensor::FromVector(std::vector<float>(4 * n, 0.5f), Shape{n, 4});
    for (int64_t i = 0; i < n; ++i)
      same.data<float>()[4 * i + 2] = same.data<float>()[4 * i + 3] = 0.75f;
    Tensor scores = TiedScores(Shape{n}, 20 + n);
    for (float iou : {0.0f, 0.5f, 1.0f}) {
      ExpectExactOnAllDevices(Nms(boxes, scores, static_cast<int32_t>(n), iou, -kInf, 0, false));
      ExpectExactOnAllDevices(Nms(same, scores, static_cast<int32_t>(n), iou, -kInf, 0, true));
    }
  }
}

TEST_CASE("cuda: CombinedNonMaxSuppression keeps the CPU's detections", "[cuda][detection]") {
  if (SkipWithoutGpu("the CombinedNonMaxSuppression comparisons")) return;
  const int64_t batch = 2, n = 1000, classes = 4;
  Tensor scores = TiedScores(Shape{batch, n, classes}, 3);
  Tensor shared = RandomBoxes(batch * n, 4).Reshaped(Shape{batch, n, 1, 4});
  Tensor per_class = RandomBoxes(batch * n * classes, 5).Reshaped(Shape{batch, n, classes, 4});
  for (const Tensor& boxes : {shared, per_class})
    for (bool pad : {false, true})
      for (bool clip : {false, true}) {
        INFO("q " << boxes.dim(2) << ", pad_per_class " << pad << ", clip " << clip);
        ExpectExactOnAllDevices(Combined(boxes, scores, 100, 150, 0.5f, 0.2f, pad, clip));
        ExpectExactOnAllDevices(Combined(boxes, scores, 20, 300, 0.3f, 0.0f, pad, clip));
      }
  // Scores that all fail the threshold: nothing kept, everything padded.
  ExpectExactOnAllDevices(Combined(shared, scores, 10, 10, 0.5f, 1.0f, false, true));
}

TEST_CASE("cuda: TopKV2 takes the CPU's entries, ties by lower index", "[cuda][detection]") {
  if (SkipWithoutGpu("the TopKV2 comparisons")) return;
  Tensor x = TiedScores(Shape{4, 1000}, 6);
  float* v = x.data<float>();
  v[3] = std::nanf(""), v[10] = std::nanf(""), v[1000 + 5] = -0.0f, v[1000 + 6] = 0.0f,
  v[2000 + 7] = kInf, v[3000 + 8] = -kInf;
  Tensor x64(DType::kFloat64, Shape{4, 1000});
  Tensor i32 = RandomTensor(DType::kInt32, Shape{4, 1000}, 7, -20, 20);
  Tensor i64 = RandomTensor(DType::kInt64, Shape{4, 1000}, 8, -3e12, 3e12);
  for (int64_t i = 0; i < x.NumElements(); ++i) x64.data<double>()[i] = v[i] * 0.1;
  i64.data<int64_t>()[1] = i64.data<int64_t>()[2] = std::numeric_limits<int64_t>::min();
  for (const Tensor& input : {x, x64, i32, i64})
    for (int32_t k : {0, 1, 7, 100, 1000}) {
      INFO(DTypeName(input.dtype()) << ", k " << k);
      ExpectExactOnAllDevices({.op = "TopKV2", .inputs = {input, Tensor::Scalar<int32_t>(k)}});
    }
  // Rank 1 and rank 3 inputs.
  ExpectExactOnAllDevices(
      {.op = "TopKV2", .inputs = {TiedScores(Shape{300}, 9), Tensor::Scalar<int32_t>(300)}});
  ExpectExactOnAllDevices(
      {.op = "TopKV2", .inputs = {TiedScores(Shape{2, 3, 50}, 10), Tensor::Scalar<int32_t>(5)}});
}

TEST_CASE("cuda: BoxIou matches the CPU", "[cuda][detection]") {
  if (SkipWithoutGpu("the BoxIou comparisons")) return;
  Tensor a = RandomBoxes(300, 11), b = RandomBoxes(200, 12);
  ExpectExactOnAllDevices({.op = "BoxIou", .inputs = {a, b}}, 1e-6);
  ExpectExactOnAllDevices({.op = "BoxIou", .inputs = {a, a}}, 1e-6);
  ExpectExactOnAllDevices(
      {.op = "BoxIou", .inputs = {a, Tensor::Zeros(DType::kFloat32, Shape{0, 4})}});
}
