#include "graph/rendezvous.h"

namespace dflow {

std::string RendezvousKey::ToString() const {
  return StrCat(send_device, ";", send_device_incarnation, ";", recv_device, ";", tensor_name, ";",
                step_id);
}

}  // namespace dflow
