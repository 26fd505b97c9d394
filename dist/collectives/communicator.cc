#include "dist/collectives/communicator.h"

#include <cstring>

namespace dflow::dist {
namespace {

// Chunk c of n elements cut into `parts`: [n*c/parts, n*(c+1)/parts); sizes
// differ by at most one, and some are empty when n < parts.
int64_t ChunkBegin(int64_t n, int parts, int c) { return n * c / parts; }

std::string RingTag(int64_t sequence, const char* phase, int step) {
  return StrCat("collective/", sequence, "/", phase, "/", step);
}

}  // namespace

Communicator::Communicator(PointToPoint& link, CollectiveOptions options)
    : link_(link), options_(options) {
  DFLOW_REQUIRE(options_.timeout.count() > 0, "Communicator: timeout must be positive, got ",
                options_.timeout.count(), " ms");
}

template <typename Body>
void Communicator::Run(const CollectiveSignature& signature, Body&& body) {
  if (broken_)
    Fail(broken_->code(), "rank ", rank(), ": ", signature.ToString(),
         " refused: the communicator failed earlier: ", broken_->message());
  try {
    Agree(signature);
    body();  // its messages are tagged with sequence_, the signature's number
  } catch (const Error& e) {
    broken_ = Error(e.code(), StrCat("collective '", signature.name, "' on rank ", rank(),
                                     " of ", num_ranks(), ": ", e.message()));
    throw *broken_;
  }
  ++sequence_;
}

void Communicator::AllReduce(const std::string& name, Tensor& tensor, ReduceOp op) {
  DFLOW_REQUIRE(op == ReduceOp::kSum || IsFloating(tensor.dtype()), "AllReduce '", name,
                "': the mean needs a float tensor, got ", tensor.SummaryString());
  CollectiveSignature signature{op == ReduceOp::kSum ? "all_reduce(sum)" : "all_reduce(mean)",
                                name, tensor.dtype(), tensor.shape(), sequence_};
  Dispatch<float, double, int32_t, int64_t>(tensor.dtype(), "AllReduce", [&]<typename T>() {
    Run(signature, [&] {
      T* data = tensor.data<T>();
      RingAllReduce(data, tensor.NumElements());
      if constexpr (std::is_floating_point_v<T>) {
        if (op == ReduceOp::kMean)
          for (int64_t i = 0; i < tensor.NumElements(); ++i) data[i] /= num_ranks();
      }
    });
  });
}

void Communicator::Broadcast(const std::string& name, Tensor& tensor) {
  CollectiveSignature signature{"broadcast", name, tensor.dtype(), tensor.shape(), sequence_};
  Run(signature, [&] {
    std::string tag = StrCat("collective/", sequence_, "/broadcast");
    if (rank() == 0) {
      for (int r = 1; r < num_ranks(); ++r) SendChunk(r, tag, tensor.raw_data(), tensor.TotalBytes());
    } else {
      Bytes bytes = RecvChunk(0, tag, tensor.TotalBytes());
      if (!bytes.empty()) std::memcpy(tensor.raw_data(), bytes.data(), bytes.size());
    }
  });
}

// Reduce-scatter: at step s rank r sends chunk (r - s) to r + 1 and adds the
// chunk (r - s - 1) it receives from r - 1 into its own; after N-1 steps rank
// r holds the full sum of chunk (r + 1). All-gather: N-1 more steps pass the
// finished chunks around the ring, each rank copying what it receives.
template <typename T>
void Communicator::RingAllReduce(T* data, int64_t n) {
  const int size = num_ranks();
  const int right = (rank() + 1) % size;
  const int left = (rank() + size - 1) % size;
  auto chunk = [&](int c) {
    c = ((c % size) + size) % size;
    int64_t begin = ChunkBegin(n, size, c);
    return std::make_pair(data + begin, static_cast<size_t>(ChunkBegin(n, size, c + 1) - begin));
  };
  for (int step = 0; step < size - 1; ++step) {
    auto [out, out_len] = chunk(rank() - step);
    SendChunk(right, RingTag(sequence_, "reduce", step), out, out_len * sizeof(T));
    auto [in, in_len] = chunk(rank() - step - 1);
    Bytes bytes = RecvChunk(left, RingTag(sequence_, "reduce", step), in_len * sizeof(T));
    const T* received = reinterpret_cast<const T*>(bytes.data());
    for (size_t i = 0; i < in_len; ++i) in[i] = received[i] + in[i];
  }
  for (int step = 0; step < size - 1; ++step) {
    auto [out, out_len] = chunk(rank() + 1 - step);
    SendChunk(right, RingTag(sequence_, "gather", step), out, out_len * sizeof(T));
    auto [in, in_len] = chunk(rank() - step);
    Bytes bytes = RecvChunk(left, RingTag(sequence_, "gather", step), in_len * sizeof(T));
    if (in_len > 0) std::memcpy(in, bytes.data(), in_len * sizeof(T));
  }
}

void Communicator::SendChunk(int to, const std::string& tag, const void* data, size_t bytes) {
  const auto* begin = static_cast<const uint8_t*>(data);
  link_.Send(to, tag, Bytes(begin, begin + bytes));
  payload_bytes_sent_ += bytes;
}

Bytes Communicator::RecvChunk(int from, const std::string& tag, size_t expected_bytes) {
  Bytes bytes = link_.Recv(from, tag, NextDeadline());
  if (bytes.size() != expected_bytes)
    Fail(Code::kDataLoss, "rank ", from, " sent ", bytes.size(), " bytes for '", tag,
         "', expected ", expected_bytes);
  return bytes;
}

}  // namespace dflow::dist
