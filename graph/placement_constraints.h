// The constraint half of placement (steps 1-3 in graph/placement.h): for one
// colocation group, the devices that have a kernel for every member and match
// every member's request, with the words that explain the choice.
#pragma once

#include <string>
#include <vector>

#include "graph/colocation.h"
#include "graph/device.h"

namespace dflow {

struct GroupConstraint {
  std::vector<int> candidates;  // indices into the device list, ascending
  std::string reason;           // why these and not the others; empty when unconstrained
};

// Throws an Error naming the op, the request, the devices with a kernel and
// the group when no device fits. `fallback` (indices into `devices`,
// ascending) are candidates only when no other device is.
GroupConstraint ConstrainGroup(const ColocationGroups& groups, int group,
                               const std::vector<DeviceName>& devices, bool allow_soft_placement,
                               const std::vector<int>& fallback = {});

}  // namespace dflow
