#include "dist/collectives/communicator.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace dflow::dist {
namespace {

// Chunk c of n elements cut into `parts`: [n*c/parts, n*(c+1)/parts); sizes
// differ by at most one, and some are empty when n < parts.
int64_t ChunkBegin(int64_t n, int parts, int c) { return n * c / parts; }

std::string RingTag(int64_t sequence, const char* phase, int step) {
  return StrCat("collective/", sequence, "/", phase, "/", step);
}

// a + b; float16 adds in float and rounds once, as its hardware would.
template <typename T>
T Plus(T a, T b) {
  return a + b;
}
template <>
Half Plus(Half a, Half b) {
  return Half(static_cast<float>(a) + static_cast<float>(b));
}

template <typename T>
void DivideInPlace(T* data, int64_t n, int divisor) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, Half>) {
      data[i] = Half(static_cast<float>(data[i]) / static_cast<float>(divisor));
    } else {
      data[i] /= static_cast<T>(divisor);
    }
  }
}

// Chunk c (taken modulo `parts`, negative c too) of data[0, n).
template <typename T>
std::pair<T*, size_t> Chunk(T* data, int64_t n, int parts, int c) {
  c = ((c % parts) + parts) % parts;
  int64_t begin = ChunkBegin(n, parts, c);
  return {data + begin, static_cast<size_t>(ChunkBegin(n, parts, c + 1) - begin)};
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
  bool rank_order = options_.sum_order == SumOrder::kRankOrder;
  std::string kind = StrCat("all_reduce(", op == ReduceOp::kSum ? "sum" : "mean",
                            rank_order ? ", rank order)" : ")");
  CollectiveSignature signature{kind, name, tensor.dtype(), tensor.shape(), sequence_};
  Dispatch<float, double, Half, int32_t, int64_t>(tensor.dtype(), "AllReduce", [&]<typename T>() {
    Run(signature, [&] {
      T* data = tensor.data<T>();
      const int64_t n = tensor.NumElements();
      if (rank_order) {
        ReduceScatterRankOrder(data, n);
      } else {
        ReduceScatterRing(data, n);
      }
      AllGatherRing(data, n, rank_order ? 0 : 1);
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half>) {
        if (op == ReduceOp::kMean) DivideInPlace(data, n, num_ranks());
      }
    });
  });
}

void Communicator::Broadcast(const std::string& name, Tensor& tensor) {
  CollectiveSignature signature{"broadcast", name, tensor.dtype(), tensor.shape(), sequence_};
  Run(signature, [&] {
    std::string tag = StrCat("collective/", sequence_, "/broadcast");
    if (rank() == 0) {
      for (int r = 1; r < num_ranks(); ++r)
        SendChunk(r, tag, tensor.raw_data(), tensor.TotalBytes());
    } else {
      Bytes bytes = RecvChunk(0, tag, tensor.TotalBytes());
      if (!bytes.empty()) std::memcpy(tensor.raw_data(), bytes.data(), bytes.size());
    }
  });
}

std::vector<Bytes> Communicator::AllGather(const std::string& name, Bytes mine) {
  CollectiveSignature signature{"all_gather", name, DType::kUInt8,
                                Shape{static_cast<int64_t>(mine.size())}, sequence_};
  const int size = num_ranks();
  std::vector<Bytes> blocks(size);
  blocks[rank()] = std::move(mine);
  Run(signature, [&] {
    const int right = (rank() + 1) % size, left = (rank() + size - 1) % size;
    const size_t length = blocks[rank()].size();
    // At step s rank r passes on block (r - s) and receives block (r - s - 1).
    for (int step = 0; step < size - 1; ++step) {
      const Bytes& out = blocks[(rank() - step + size) % size];
      SendChunk(right, RingTag(sequence_, "all_gather", step), out.data(), out.size());
      blocks[(rank() - step - 1 + 2 * size) % size] =
          RecvChunk(left, RingTag(sequence_, "all_gather", step), length);
    }
  });
  return blocks;
}

// Ring reduce-scatter: at step s rank r sends chunk (r - s) to r + 1 and
// adds the chunk (r - s - 1) it receives from r - 1 into its own; after N-1
// steps rank r holds the full sum of chunk (r + 1).
template <typename T>
void Communicator::ReduceScatterRing(T* data, int64_t n) {
  const int size = num_ranks();
  const int right = (rank() + 1) % size, left = (rank() + size - 1) % size;
  for (int step = 0; step < size - 1; ++step) {
    auto [out, out_len] = Chunk(data, n, size, rank() - step);
    SendChunk(right, RingTag(sequence_, "reduce", step), out, out_len * sizeof(T));
    auto [in, in_len] = Chunk(data, n, size, rank() - step - 1);
    Bytes bytes = RecvChunk(left, RingTag(sequence_, "reduce", step), in_len * sizeof(T));
    const T* received = reinterpret_cast<const T*>(bytes.data());
    for (size_t i = 0; i < in_len; ++i) in[i] = Plus(received[i], in[i]);
  }
}

// Direct reduce-scatter: chunk c goes straight to rank c, which adds the
// ranks' chunks in rank order; rank r then holds the sum of chunk r.
template <typename T>
void Communicator::ReduceScatterRankOrder(T* data, int64_t n) {
  const int size = num_ranks();
  const std::string tag = RingTag(sequence_, "scatter", 0);
  for (int c = 0; c < size; ++c) {
    auto [out, out_len] = Chunk(data, n, size, c);
    if (c != rank()) SendChunk(c, tag, out, out_len * sizeof(T));
  }
  auto [mine, len] = Chunk(data, n, size, rank());
  std::vector<T> sum(len);
  for (int from = 0; from < size; ++from) {
    const T* values = mine;
    Bytes bytes;
    if (from != rank()) {
      bytes = RecvChunk(from, tag, len * sizeof(T));
      values = reinterpret_cast<const T*>(bytes.data());
    }
    for (size_t i = 0; i < len; ++i) sum[i] = from == 0 ? values[i] : Plus(sum[i], values[i]);
  }
  std::copy(sum.begin(), sum.end(), mine);
}

// Ring all-gather: at step s rank r sends the finished chunk
// (r + owned_offset - s) to r + 1 and copies the one it receives from r - 1.
template <typename T>
void Communicator::AllGatherRing(T* data, int64_t n, int owned_offset) {
  const int size = num_ranks();
  const int right = (rank() + 1) % size, left = (rank() + size - 1) % size;
  for (int step = 0; step < size - 1; ++step) {
    auto [out, out_len] = Chunk(data, n, size, rank() + owned_offset - step);
    SendChunk(right, RingTag(sequence_, "gather", step), out, out_len * sizeof(T));
    auto [in, in_len] = Chunk(data, n, size, rank() + owned_offset - step - 1);
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
