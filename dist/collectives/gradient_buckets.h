// Gradient fusion for data-parallel training: a step's gradients are packed
// into a few buckets and each bucket is all-reduced as one tensor, as soon as
// its last gradient is handed over, on a communication thread, so reduction
// overlaps the rest of backprop (Horovod's tensor fusion).
//
//   GradientBuckets buckets(comm, specs);          // specs in backprop order
//   for each step:
//     as backprop produces gradient i: buckets.Ready(i, grad_i);
//     std::vector<Tensor> mean = buckets.Finish(); // one per spec, every rank equal
//
// A Communicator is used by one thread at a time: between the first Ready and
// Finish of a step it belongs to the buckets' thread.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/collectives/communicator.h"

namespace dflow::dist {

struct GradientSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;  // fully defined
};

struct BucketOptions {
  // Consecutive gradients of one dtype share a bucket up to this size; a
  // larger gradient gets a bucket of its own.
  size_t bucket_bytes = size_t{4} << 20;
  ReduceOp op = ReduceOp::kMean;
  // Horovod's fp16 compression: float32 buckets travel and are summed as
  // float16 (saturating at +-65504) and come back as float32: half the bytes.
  bool fp16_on_wire = false;
  std::string name = "gradients";  // collectives are named "<name>/bucket:<b>"
};

class GradientBuckets {
 public:
  // Every rank must pass the same specs in the same order (the order in which
  // backprop usually produces them: last layer first), so the buckets match.
  GradientBuckets(Communicator& comm, std::vector<GradientSpec> specs, BucketOptions options = {});
  ~GradientBuckets();  // waits for a bucket in flight, then stops the thread
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Hands over gradient `index` of this step (dtype and shape of its spec;
  // once per step). Its bucket's all-reduce starts when the bucket is full.
  void Ready(int index, const Tensor& gradient);
  // Waits until every bucket of this step is reduced and returns the reduced
  // gradients in spec order; then the next step may begin. Throws naming
  // the gradients never handed over, or the collective's error.
  std::vector<Tensor> Finish();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  int num_gradients() const { return static_cast<int>(specs_.size()); }
  int bucket_of(int index) const { return bucket_of_.at(index); }
  // Buckets of the current step reduced so far.
  int buckets_reduced() const;

 private:
  struct Bucket {
    std::vector<int> members;  // spec indices, in order
    int64_t elements = 0;
    int waiting = 0;           // members not yet handed over this step
  };
  void AssignBuckets();
  void CommunicationLoop();
  void ReduceBucket(int b);

  Communicator& comm_;
  std::vector<GradientSpec> specs_;
  BucketOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Tensor> inputs_;   // this step's handed-over gradients
  std::vector<Tensor> outputs_;  // their reduced values
  int next_bucket_ = 0;          // the bucket the communication thread reduces next
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dflow::dist
