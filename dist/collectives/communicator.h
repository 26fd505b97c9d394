// Collectives among the N ranks of a PointToPoint link (Horovod-style data
// parallelism): ring all-reduce and broadcast from rank 0. Every rank calls
// the same collectives in the same order; before each one the ranks agree on
// kind, name, dtype, shape and sequence number (rank 0 gathers and answers),
// so a mismatch or a missing rank is an Error raised on every rank, naming
// the ranks involved, within the timeout: never a hang.
//
//   InProcessNetwork net(4);           // or a ZeroMQ link between processes
//   Communicator comm(net.endpoint(rank), {.timeout = std::chrono::seconds(30)});
//   comm.Broadcast("init/w", w);       // rank 0's initial values everywhere
//   comm.AllReduce("grads", g, ReduceOp::kMean);
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "dist/collectives/point_to_point.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace dflow::dist {

enum class ReduceOp { kSum, kMean };

// The order in which all-reduce adds the ranks' values. Float addition is
// not associative, so the order decides the last bits of the result.
enum class SumOrder {
  // Reduce-scatter around the ring: chunk c is summed x_c + x_c+1 + ... + x_c-1.
  kRing,
  // Each rank sends chunk c straight to rank c, which sums x_0 + x_1 + ... in
  // rank order: the same bits as a parameter server adding the workers'
  // gradients in worker order, for the same 2(N-1)/N bytes per rank, but each
  // rank talks to all others instead of its two neighbours.
  kRankOrder,
};

struct CollectiveOptions {
  // How long a rank waits for the others at each stage of a collective.
  std::chrono::milliseconds timeout{30000};
  SumOrder sum_order = SumOrder::kRing;
};

// What the ranks agree on before a collective; equal on every rank or error.
struct CollectiveSignature {
  std::string kind;  // "all_reduce(sum)", "broadcast"
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  int64_t sequence = 0;
  // "all_reduce(sum) 'grads' float32[3,4] #5"
  std::string ToString() const;
};

class Communicator {
 public:
  explicit Communicator(PointToPoint& link, CollectiveOptions options = {});

  int rank() const { return link_.rank(); }
  int num_ranks() const { return link_.num_ranks(); }

  // Sums (or averages) `tensor` over all ranks, in place; on return every
  // rank holds the same bits. Ring algorithm: the tensor is cut into N
  // chunks; N-1 reduce-scatter steps then N-1 all-gather steps, each rank
  // sending one chunk to its right neighbour per step, 2(N-1)/N of the data
  // in all. The sum of chunk c is accumulated in ring order starting at rank
  // c (x_c + x_c+1 + ... + x_c-1), the same on every run, or in rank order
  // (options.sum_order). kMean divides the sum by N. float32, float64,
  // float16 (each addition rounded to float16), int32, int64 (kMean: float
  // types only).
  void AllReduce(const std::string& name, Tensor& tensor, ReduceOp op = ReduceOp::kSum);
  // Copies rank 0's `tensor` into every other rank's (same dtype and shape).
  void Broadcast(const std::string& name, Tensor& tensor);
  // Every rank's `mine`, indexed by rank, on every rank. The ranks agree on
  // the length (all equal) first. Ring algorithm: N-1 steps, each rank
  // passing one block to its right neighbour, (N-1) blocks sent per rank.
  std::vector<Bytes> AllGather(const std::string& name, Bytes mine);

  // Collectives started so far; the next one's sequence number.
  int64_t sequence() const { return sequence_; }
  // Bytes of tensor data this rank has sent (agreement messages excluded).
  size_t payload_bytes_sent() const { return payload_bytes_sent_; }

 private:
  // Raises on every rank when the ranks' signatures differ or one is missing.
  void Agree(const CollectiveSignature& signature);
  void AgreeAsCoordinator(const CollectiveSignature& signature, Deadline deadline);
  void AgreeAsMember(const CollectiveSignature& signature, Deadline deadline);
  // After either reduce-scatter, rank r holds the sum of chunk
  // (r + owned_offset); the all-gather passes the finished chunks around.
  template <typename T>
  void ReduceScatterRing(T* data, int64_t n);
  template <typename T>
  void ReduceScatterRankOrder(T* data, int64_t n);
  template <typename T>
  void AllGatherRing(T* data, int64_t n, int owned_offset);
  void SendChunk(int to, const std::string& tag, const void* data, size_t bytes);
  Bytes RecvChunk(int from, const std::string& tag, size_t expected_bytes);
  // Runs one collective: checks the communicator is usable, agrees, runs
  // `body`; the first error leaves the communicator unusable (its peers may
  // be mid-collective) and is rethrown by every later call.
  template <typename Body>
  void Run(const CollectiveSignature& signature, Body&& body);
  Deadline NextDeadline() const { return std::chrono::steady_clock::now() + options_.timeout; }

  PointToPoint& link_;
  CollectiveOptions options_;
  int64_t sequence_ = 0;
  size_t payload_bytes_sent_ = 0;
  std::optional<Error> broken_;
};

}  // namespace dflow::dist
