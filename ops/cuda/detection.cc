// GPU OpKernels of the detection ops: BoxIou, TopKV2, NonMaxSuppressionV5
// and CombinedNonMaxSuppression (CUDA kernels in detection.cu).
//
// NMS follows torchvision's GPU design. The scores (and boxes) are copied to
// the host, which checks the inputs as the CPU kernels do, orders the
// candidates with the CPU's detection::SortedCandidates (descending score,
// equal scores by ascending index) and normalises their boxes; the GPU then
// computes the O(m^2) part, every candidate pair's IoU, as a bitmask of
// 64-candidate words (m * ceil(m / 64) words a problem: 128 MB at m = 32k);
// the host walks the candidates in order over the copied mask, keeping each
// one no kept box suppresses. That is the CPU's naive greedy loop, which
// detection::HardNms equals, so the same indices come out. Soft-NMS
// (soft_nms_sigma > 0) re-weights scores one kept box at a time and runs on
// the host, the CPU's detection::SoftNms over the copied inputs. The small
// outputs are written on the host and copied to the device.
#include <algorithm>

#include "ops/box_geometry.h"
#include "ops/cpu/greedy_nms.h"
#include "ops/detection_args.h"
#include "ops/cuda/detection_launch.h"
#include "ops/cuda/kernel_util.h"

namespace dflow {
namespace {

using detection::Box;

// One greedy NMS problem: its candidates' boxes in greedy order.
struct NmsProblem {
  std::vector<Box> boxes;
  int64_t max_output;
};

// The kept positions (into each problem's boxes) of hard NMS, every problem
// at once: one upload, one mask kernel, one download.
std::vector<std::vector<int32_t>> GpuHardNms(const OpKernelContext& ctx,
                                             const std::vector<NmsProblem>& problems,
                                             float iou_threshold) {
  const auto segments = static_cast<int64_t>(problems.size());
  std::vector<int64_t> offsets(2 * segments + 1, 0);  // begin [segments + 1], mask_begin [segments]
  std::vector<float> records;
  int64_t words = 0, max_candidates = 0;
  for (int64_t s = 0; s < segments; ++s) {
    const auto m = static_cast<int64_t>(problems[s].boxes.size());
    offsets[s + 1] = offsets[s] + m;
    offsets[segments + 1 + s] = words;
    words += m * ((m + cuda::kNmsBlock - 1) / cuda::kNmsBlock);
    max_candidates = std::max(max_candidates, m);
    for (const Box& b : problems[s].boxes)
      records.insert(records.end(), {b.ymin, b.xmin, b.ymax, b.xmax, b.area});
  }
  std::vector<std::vector<int32_t>> kept(segments);
  if (words == 0) return kept;
  const int64_t blocks = (max_candidates + cuda::kNmsBlock - 1) / cuda::kNmsBlock;
  DFLOW_REQUIRE(segments <= INT32_MAX && blocks <= 65535, ctx.node().Describe(), ": ", segments,
                " NMS problems of up to ", max_candidates, " candidates are too many for the GPU");
  CudaDevice& gpu = cuda::Gpu(ctx);
  const std::string where = ctx.node().Describe();
  Tensor boxes = gpu.CopyToDevice(Tensor::FromVector(records), where);
  Tensor bounds = gpu.CopyToDevice(Tensor::FromVector(offsets), where);
  Tensor mask(DType::kInt64, Shape{words}, ctx.device().allocator());
  const int64_t* begin = bounds.data<int64_t>();
  cuda::LaunchNmsMask(cuda::Stream(ctx), boxes.data<float>(), begin, begin + segments + 1,
                      segments, max_candidates, iou_threshold,
                      reinterpret_cast<uint64_t*>(mask.data<int64_t>()));
  cuda::CheckLaunch(ctx, "NmsMask");
  Tensor host = gpu.CopyToHost(mask, where);
  const auto* bits = reinterpret_cast<const uint64_t*>(host.data<int64_t>());
  for (int64_t s = 0; s < segments; ++s) {
    const auto m = static_cast<int64_t>(problems[s].boxes.size());
    const int64_t row_words = (m + cuda::kNmsBlock - 1) / cuda::kNmsBlock;
    const uint64_t* rows = bits + offsets[segments + 1 + s];
    std::vector<uint64_t> removed(row_words, 0);
    for (int64_t i = 0; i < m && static_cast<int64_t>(kept[s].size()) < problems[s].max_output;
         ++i) {
      if (removed[i / cuda::kNmsBlock] >> (i % cuda::kNmsBlock) & 1) continue;
      kept[s].push_back(static_cast<int32_t>(i));
      for (int64_t w = i / cuda::kNmsBlock; w < row_words; ++w)
        removed[w] |= rows[i * row_words + w];
    }
  }
  return kept;
}

class GpuBoxIouKernel : public OpKernel {
 public:
  explicit GpuBoxIouKernel(const Node& node) : OpKernel(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    detection::CheckBoxIouInputs(node(), a, b);
    Tensor& iou = ctx.allocate_output(0, Shape{a.dim(0), b.dim(0)});
    cuda::LaunchBoxIou(cuda::Stream(ctx), a.data<float>(), b.data<float>(), iou.data<float>(),
                       a.dim(0), b.dim(0));
    cuda::CheckLaunch(ctx, "BoxIou");
  }
};

class GpuTopKKernel : public OpKernel {
 public:
  explicit GpuTopKKernel(const Node& node) : OpKernel(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const int64_t k = detection::CheckTopKArgs(node(), input, cuda::HostInput(ctx, 1));
    const int64_t n = input.dim(input.rank() - 1);
    DFLOW_REQUIRE(input.NumElements() <= INT32_MAX, node().Describe(),
                  ": the GPU kernel sorts at most ", INT32_MAX, " entries, input ",
                  input.shape().ToString(), " has more");
    std::vector<int64_t> dims = input.shape().dims();
    dims.back() = k;
    Tensor& values = ctx.allocate_output(0, Shape(dims));
    Tensor& indices = ctx.allocate_output(1, Shape(dims));
    const int64_t rows = n == 0 ? 0 : input.NumElements() / n;
    if (k == 0 || rows == 0) return;
    const size_t bytes = cuda::TopKScratchBytes(Type(input.dtype()), rows, n);
    Tensor scratch(DType::kUInt8, Shape{static_cast<int64_t>(bytes)}, ctx.device().allocator());
    DFLOW_CUDA(cuda::LaunchTopK(cuda::Stream(ctx), Type(input.dtype()), input.raw_data(), rows, n,
                                k, scratch.raw_data(), bytes, values.raw_data(),
                                indices.data<int32_t>()),
               node().Describe());
    cuda::CheckLaunch(ctx, "TopK");
  }

 private:
  static cuda::CastType Type(DType dtype) {
    switch (dtype) {
      case DType::kFloat64: return cuda::CastType::kF64;
      case DType::kInt32: return cuda::CastType::kI32;
      case DType::kInt64: return cuda::CastType::kI64;
      default: return cuda::CastType::kF32;
    }
  }
};

class GpuNonMaxSuppressionV5Kernel : public OpKernel {
 public:
  explicit GpuNonMaxSuppressionV5Kernel(const Node& node)
      : OpKernel(node), pad_(node.attr<bool>("pad_to_max_output_size")) {}

  void Compute(OpKernelContext& ctx) const override {
    Tensor boxes = cuda::HostInput(ctx, 0);
    Tensor scores = cuda::HostInput(ctx, 1);
    Tensor scalars[4];
    for (int i = 2; i <= 5; ++i) scalars[i - 2] = cuda::HostInput(ctx, i);
    const detection::NmsArgs args = detection::CheckNmsArgs(
        node(), boxes, scores, {&scalars[0], &scalars[1], &scalars[2], &scalars[3]});
    const int64_t max_output = args.max_output_size;
    // Hard NMS on the device: one problem, the candidates in score order.
    detection::NmsSelection kept = detection::NonMaxSuppression(
        boxes.data<float>(), scores.data<float>(), boxes.dim(0), args,
        [&](const std::vector<Box>& normalized, const std::vector<int32_t>& order) {
          std::vector<NmsProblem> problem(1, {{}, max_output});
          for (int32_t i : order) problem[0].boxes.push_back(normalized[i]);
          // Kept by name: a range-for over GpuHardNms(...)[0] would iterate
          // a vector destroyed with its temporary (before C++23).
          const std::vector<std::vector<int32_t>> kept = GpuHardNms(ctx, problem, args.iou_threshold);
          std::vector<int32_t> selected;
          for (int32_t at : kept[0]) selected.push_back(order[at]);
          return selected;
        });
    std::vector<int32_t>& selected = kept.indices;
    std::vector<float>& selected_scores = kept.scores;
    const auto valid = static_cast<int64_t>(selected.size());
    const int64_t size = pad_ ? max_output : valid;
    selected.resize(size, 0);
    selected_scores.resize(size, 0.0f);
    CudaDevice& gpu = cuda::Gpu(ctx);
    ctx.set_output(0, gpu.CopyToDevice(Tensor::FromVector(selected), node().Describe()));
    ctx.set_output(1, gpu.CopyToDevice(Tensor::FromVector(selected_scores), node().Describe()));
    ctx.set_output(2, gpu.CopyToDevice(Tensor::Scalar(static_cast<int32_t>(valid)),
                                       node().Describe()));
  }

 private:
  bool pad_;
};

struct Detection {
  float score;
  int32_t class_id;
  const float* coords;  // the input box, as given (not normalised)
};

class GpuCombinedNonMaxSuppressionKernel : public OpKernel {
 public:
  explicit GpuCombinedNonMaxSuppressionKernel(const Node& node)
      : OpKernel(node), pad_per_class_(node.attr<bool>("pad_per_class")),
        clip_boxes_(node.attr<bool>("clip_boxes")) {}

  void Compute(OpKernelContext& ctx) const override {
    Tensor boxes = cuda::HostInput(ctx, 0);
    Tensor scores = cuda::HostInput(ctx, 1);
    Tensor scalars[4];
    for (int i = 2; i <= 5; ++i) scalars[i - 2] = cuda::HostInput(ctx, i);
    const detection::CombinedNmsArgs z = detection::CheckCombinedNmsArgs(
        node(), boxes, scores, {&scalars[0], &scalars[1], &scalars[2], &scalars[3]}, pad_per_class_);
    const int64_t batch = z.batch, n = z.boxes, q = z.q, classes = z.classes;
    const int64_t per_class = z.per_class, per_batch = z.per_batch;
    const float iou_threshold = z.iou_threshold, score_threshold = z.score_threshold;

    // Problem b * classes + c: class c of image b.
    std::vector<NmsProblem> problems(batch * classes);
    std::vector<std::vector<int32_t>> orders(batch * classes);
    const float* all_boxes = boxes.data<float>();
    const float* all_scores = scores.data<float>();
    auto coords = [&](int64_t b, int64_t c, int64_t i) {
      return all_boxes + ((b * n + i) * q + (q == 1 ? 0 : c)) * 4;
    };
    for (int64_t bc = 0; bc < batch * classes; ++bc) {
      const int64_t b = bc / classes, c = bc % classes;
      orders[bc] = detection::SortedCandidates(all_scores + b * n * classes + c, classes, n,
                                               score_threshold);
      problems[bc].max_output = per_class;
      for (int32_t i : orders[bc])
        problems[bc].boxes.push_back(detection::NormalizeBox(coords(b, c, i)));
    }
    std::vector<std::vector<int32_t>> kept = GpuHardNms(ctx, problems, iou_threshold);

    Tensor out_boxes = Tensor::Zeros(DType::kFloat32, Shape{batch, per_batch, 4});
    Tensor out_scores = Tensor::Zeros(DType::kFloat32, Shape{batch, per_batch});
    Tensor out_classes = Tensor::Zeros(DType::kFloat32, Shape{batch, per_batch});
    Tensor valid(DType::kInt32, Shape{batch});
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Detection> all;
      for (int64_t c = 0; c < classes; ++c)
        for (int32_t at : kept[b * classes + c]) {
          int32_t i = orders[b * classes + c][at];
          all.push_back({all_scores[(b * n + i) * classes + c], static_cast<int32_t>(c),
                         coords(b, c, i)});
        }
      std::stable_sort(all.begin(), all.end(),
                       [](const Detection& x, const Detection& y) { return x.score > y.score; });
      const auto count = std::min<int64_t>(static_cast<int64_t>(all.size()), per_batch);
      valid.data<int32_t>()[b] = static_cast<int32_t>(count);
      for (int64_t d = 0; d < count; ++d) {
        int64_t at = b * per_batch + d;
        for (int k = 0; k < 4; ++k) {
          float v = all[d].coords[k];
          out_boxes.data<float>()[at * 4 + k] = clip_boxes_ ? std::max(std::min(v, 1.0f), 0.0f) : v;
        }
        out_scores.data<float>()[at] = all[d].score;
        out_classes.data<float>()[at] = static_cast<float>(all[d].class_id);
      }
    }
    CudaDevice& gpu = cuda::Gpu(ctx);
    const Tensor* outputs[] = {&out_boxes, &out_scores, &out_classes, &valid};
    for (int i = 0; i < 4; ++i) ctx.set_output(i, gpu.CopyToDevice(*outputs[i], node().Describe()));
  }

 private:
  bool pad_per_class_, clip_boxes_;
};

[[maybe_unused]] const KernelRegistrar kDetectionKernels[] = {
    cuda::GpuKernel<GpuBoxIouKernel>("BoxIou", DType::kInvalid),
    cuda::GpuKernel<GpuTopKKernel>("TopKV2", DType::kFloat32),
    cuda::GpuKernel<GpuTopKKernel>("TopKV2", DType::kFloat64),
    cuda::GpuKernel<GpuTopKKernel>("TopKV2", DType::kInt32),
    cuda::GpuKernel<GpuTopKKernel>("TopKV2", DType::kInt64),
    cuda::Float32Kernel<GpuNonMaxSuppressionV5Kernel>("NonMaxSuppressionV5"),
    cuda::GpuKernel<GpuCombinedNonMaxSuppressionKernel>("CombinedNonMaxSuppression",
                                                        DType::kInvalid),
};

}  // namespace
}  // namespace dflow
