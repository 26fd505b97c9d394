#include "graph/rendezvous.h"

namespace dflow {

// Built by appends, not StrCat's ostringstream: every Send and Recv makes one.
std::string RendezvousKey::ToString() const {
  std::string incarnation = std::to_string(send_device_incarnation), step = std::to_string(step_id);
  std::string out;
  out.reserve(send_device.size() + recv_device.size() + tensor_name.size() + incarnation.size() +
              step.size() + 4);
  out.append(send_device).append(1, ';').append(incarnation).append(1, ';');
  out.append(recv_device).append(1, ';').append(tensor_name).append(1, ';').append(step);
  return out;
}

}  // namespace dflow
