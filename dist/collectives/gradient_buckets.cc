#include "dist/collectives/gradient_buckets.h"

#include <cstring>

#include "dist/training/gradient_codec.h"

namespace dflow::dist {

GradientBuckets::GradientBuckets(Communicator& comm, std::vector<GradientSpec> specs,
                                 BucketOptions options)
    : comm_(comm), specs_(std::move(specs)), options_(std::move(options)) {
  DFLOW_REQUIRE(!specs_.empty(), "GradientBuckets '", options_.name, "': no gradients given");
  for (const GradientSpec& spec : specs_)
    DFLOW_REQUIRE(spec.shape.IsFullyDefined() && IsFloating(spec.dtype) &&
                      spec.dtype != DType::kFloat16,
                  "GradientBuckets '", options_.name, "': gradient '", spec.name,
                  "' needs a float32/float64 dtype and a fully defined shape, got ",
                  DTypeName(spec.dtype), spec.shape.ToString());
  AssignBuckets();
  inputs_.resize(specs_.size());
  outputs_.resize(specs_.size());
  thread_ = std::thread([this] { CommunicationLoop(); });
}

GradientBuckets::~GradientBuckets() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void GradientBuckets::AssignBuckets() {
  bucket_of_.resize(specs_.size());
  for (int i = 0; i < static_cast<int>(specs_.size()); ++i) {
    const GradientSpec& spec = specs_[i];
    int64_t elements = spec.shape.NumElements();
    size_t bytes = static_cast<size_t>(elements) * DTypeSize(spec.dtype);
    bool fits = !buckets_.empty() && specs_[buckets_.back().members.front()].dtype == spec.dtype &&
                (buckets_.back().elements * DTypeSize(spec.dtype) + bytes) <= options_.bucket_bytes;
    if (!fits) buckets_.emplace_back();
    buckets_.back().members.push_back(i);
    buckets_.back().elements += elements;
    buckets_.back().waiting += 1;
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
}

void GradientBuckets::Ready(int index, const Tensor& gradient) {
  DFLOW_REQUIRE(index >= 0 && index < static_cast<int>(specs_.size()), "GradientBuckets '",
                options_.name, "': gradient index ", index, " is out of range 0..",
                specs_.size() - 1);
  const GradientSpec& spec = specs_[index];
  DFLOW_REQUIRE(gradient.dtype() == spec.dtype && gradient.shape() == spec.shape,
                "GradientBuckets '", options_.name, "': gradient '", spec.name, "' should be ",
                DTypeName(spec.dtype), spec.shape.ToString(), ", got ", gradient.SummaryString());
  {
    std::lock_guard lock(mu_);
    DFLOW_REQUIRE(!inputs_[index].valid(), "GradientBuckets '", options_.name, "': gradient '",
                  spec.name, "' was handed over twice in one step");
    inputs_[index] = gradient;
    buckets_[bucket_of_[index]].waiting -= 1;
  }
  changed_.notify_all();
}

std::vector<Tensor> GradientBuckets::Finish() {
  std::unique_lock lock(mu_);
  std::string missing;
  for (size_t i = 0; i < specs_.size(); ++i)
    if (!inputs_[i].valid()) missing += (missing.empty() ? "'" : ", '") + specs_[i].name + "'";
  DFLOW_REQUIRE(missing.empty(), "GradientBuckets '", options_.name,
                "': Finish before these gradients were handed over: ", missing);
  changed_.wait(lock, [&] { return next_bucket_ == num_buckets(); });
  std::exception_ptr error = error_;
  std::vector<Tensor> result = std::move(outputs_);
  // Reset for the next step.
  error_ = nullptr;
  inputs_.assign(specs_.size(), Tensor());
  outputs_.assign(specs_.size(), Tensor());
  for (Bucket& bucket : buckets_) bucket.waiting = static_cast<int>(bucket.members.size());
  next_bucket_ = 0;
  if (error) std::rethrow_exception(error);
  return result;
}

int GradientBuckets::buckets_reduced() const {
  std::lock_guard lock(mu_);
  return next_bucket_;
}

// Buckets are reduced strictly in order, so every rank issues the same
// collectives in the same order whatever order its gradients arrive in.
void GradientBuckets::CommunicationLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] {
      return stopping_ || (next_bucket_ < num_buckets() && buckets_[next_bucket_].waiting == 0);
    });
    if (stopping_) return;
    int b = next_bucket_;
    lock.unlock();
    std::exception_ptr error;
    try {
      ReduceBucket(b);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    // After an error the step's other buckets are skipped: Finish rethrows.
    if (error) error_ = error;
    next_bucket_ = error ? num_buckets() : b + 1;
    changed_.notify_all();
  }
}

// Copies the bucket's gradients into one flat tensor, all-reduces it, and
// cuts the result back into tensors of the gradients' shapes.
void GradientBuckets::ReduceBucket(int b) {
  const Bucket& bucket = buckets_[b];
  DType dtype = specs_[bucket.members.front()].dtype;
  size_t element_size = DTypeSize(dtype);
  Tensor fused(dtype, Shape{bucket.elements});
  auto* cursor = static_cast<uint8_t*>(fused.raw_data());
  for (int i : bucket.members) {
    const Tensor& input = inputs_[i];  // stays put until Finish; no lock needed
    std::memcpy(cursor, input.raw_data(), input.TotalBytes());
    cursor += input.TotalBytes();
  }
  std::string name = StrCat(options_.name, "/bucket:", b);
  if (options_.fp16_on_wire && dtype == DType::kFloat32) {
    Bytes half_bits = EncodeFloat16(fused);
    Tensor half(DType::kFloat16, fused.shape());
    std::memcpy(half.raw_data(), half_bits.data(), half_bits.size());
    comm_.AllReduce(name, half, options_.op);
    fused = half.CastTo(DType::kFloat32);
  } else {
    comm_.AllReduce(name, fused, options_.op);
  }
  std::vector<Tensor> reduced;
  cursor = static_cast<uint8_t*>(fused.raw_data());
  for (int i : bucket.members) {
    Tensor out(dtype, specs_[i].shape);
    std::memcpy(out.raw_data(), cursor, out.TotalBytes());
    cursor += static_cast<size_t>(out.NumElements()) * element_size;
    reduced.push_back(std::move(out));
  }
  std::lock_guard lock(mu_);
  for (size_t k = 0; k < bucket.members.size(); ++k) outputs_[bucket.members[k]] = reduced[k];
}

}  // namespace dflow::dist
