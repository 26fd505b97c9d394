// Ring all-reduce data parallelism (Horovod's model) as a DataParallelStrategy:
// initial variables broadcast from rank 0, gradients fused into buckets and
// all-reduced (mean) over the ring, every worker applying the same mean.
// Over a ZmqLink between processes (Connect, from the cluster document), or
// over any PointToPoint link (threads of one process in tests).
#pragma once

#include <memory>

#include "dist/collectives/compressed_all_reduce.h"
#include "dist/collectives/zmq_link.h"
#include "dist/training/data_parallel.h"

namespace dflow::dist {

struct RingOptions {
  // Rank order by default: the same bits as a synchronous parameter server.
  CollectiveOptions collective{.timeout = std::chrono::seconds(60), .sum_order = SumOrder::kRankOrder};
  BucketOptions buckets;
  ZmqLinkOptions link;
  // kNone: float32 buckets; kFloat16: buckets.fp16_on_wire; kOneBit: each
  // gradient 1-bit encoded with this worker's error feedback, all-gathered
  // and averaged by CompressedAllReduce (no overlap with backprop: each
  // gradient is encoded when the step's gradients are all in).
  CodecKind codec = CodecKind::kNone;
};

class RingAllReduceStrategy final : public DataParallelStrategy {
 public:
  // Over `link`, which must outlive the strategy.
  RingAllReduceStrategy(PointToPoint& link, std::vector<GradientSpec> specs, RingOptions options = {});
  // This process's worker of `cluster`: connects its ZmqLink (waiting up to
  // options.link.startup_timeout for the others) and owns it.
  static std::unique_ptr<RingAllReduceStrategy> Connect(const ClusterSpec& cluster,
                                                        std::vector<GradientSpec> specs,
                                                        RingOptions options = {});

  // Over `link`, which it owns (already connected).
  static std::unique_ptr<RingAllReduceStrategy> Own(std::unique_ptr<ZmqLink> link, std::vector<GradientSpec> specs,
                                                    RingOptions options = {});

  int worker() const override { return link_.rank(); }
  int num_workers() const override { return link_.num_ranks(); }
  void BroadcastFromChief(const std::string& name, Tensor& value) override;
  std::vector<Tensor> AverageGradients(const std::vector<Tensor>& gradients) override;
  // Straight into the buckets: a full bucket's all-reduce starts at once.
  void GradientReady(int index, const Tensor& gradient) override;
  std::vector<Tensor> AverageReadyGradients() override;
  bool AnyWorker(bool flag) override;
  void Finish() override;

  // For other collectives between steps (the buckets use it during AverageGradients).
  Communicator& communicator() { return comm_; }

 private:
  RingAllReduceStrategy(std::unique_ptr<ZmqLink> link, std::vector<GradientSpec> specs, RingOptions options);
  static RingOptions Resolved(RingOptions options);
  void MakeCompressed(const std::vector<GradientSpec>& specs, CodecKind codec);

  std::unique_ptr<ZmqLink> owned_link_;
  PointToPoint& link_;
  Communicator comm_;
  GradientBuckets buckets_;
  std::unique_ptr<CompressedAllReduce> compressed_;  // codec kOneBit only
  std::chrono::milliseconds timeout_;
};

}  // namespace dflow::dist
