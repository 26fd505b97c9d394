// Gives graph/'s Session its multi-device half: dist::Place and
// dist::Partition cut the graph, a LocalRendezvous joins each step's
// partitions. Registered when libdflow loads (graph/ may not call dist/).
#include "dist/partition.h"
#include "dist/rendezvous.h"
#include "graph/session.h"

namespace dflow::dist {
namespace {

SessionPartitioner::Partitions PlaceAndPartition(const Graph& graph,
                                                 const std::vector<std::string>& devices,
                                                 bool allow_soft_placement) {
  PlacementOptions options;
  options.allow_soft_placement = allow_soft_placement;
  Placement placement = Place(graph, devices, options);
  SessionPartitioner::Partitions partitions;
  for (DevicePartition& part : Partition(graph, placement))
    partitions.emplace_back(part.device, std::move(part.graph));
  return partitions;
}

[[maybe_unused]] const bool registered = [] {
  RegisterSessionPartitioner({PlaceAndPartition, [] { return std::make_unique<LocalRendezvous>(); }});
  return true;
}();

}  // namespace
}  // namespace dflow::dist
