#include "dist/coordinator.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "dist/cluster.h"
#include "dist/transport/curve.h"
#include "dist/transport/zmq_transport.h"
#include "graph/graph_io.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::dist {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {
    if (fd_ < 0) Fail(Code::kUnavailable, "cannot open a socket: ", std::strerror(errno));
  }
  ~Fd() { close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Endpoint(const std::string& coordinator) {
  auto [host, port] = ParseHostPort(coordinator, "the coordinator");
  return StrCat("tcp://", host == "localhost" ? std::string("127.0.0.1") : host, ":", port);
}

// Milliseconds left before `deadline`, at least 0.
long Left(Clock::time_point deadline) {
  return std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

// Rank `rank`'s hello, or nullopt for a message that is not one.
struct Hello {
  int rank = 0, size = 0;
  std::string address;
};
std::optional<Hello> ReadHello(const std::string& text, std::string& why) {
  try {
    Json hello = ParseJson<Json>(text, "a rank's hello");
    if (!hello.is_object() || !hello.contains("rank") || !hello["rank"].is_number_integer() ||
        !hello.contains("size") || !hello["size"].is_number_integer() || !hello.contains("address") ||
        !hello["address"].is_string()) {
      why = "not {rank, size, address}";
      return std::nullopt;
    }
    Hello out{hello["rank"].get<int>(), hello["size"].get<int>(), hello["address"].get<std::string>()};
    ParseHostPort(out.address, "a rank's address");
    return out;
  } catch (const Error& e) {
    why = e.message();
    return std::nullopt;
  }
}

}  // namespace

int FreePort() {
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0)
    Fail(Code::kUnavailable, "cannot find a free port: ", std::strerror(errno));
  return ntohs(addr.sin_port);
}

// A UDP "connect" sends nothing; it only asks the kernel for the route, whose
// source address is what the others can reach.
std::string LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0)
    Fail(Code::kUnavailable, "cannot resolve the coordinator's host '", host, "': ", gai_strerror(error));
  Fd fd(socket(AF_INET, SOCK_DGRAM, 0));
  int connected = connect(fd.get(), found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  if (connected != 0 || getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &length) != 0)
    Fail(Code::kUnavailable, "no route to the coordinator's host '", host, "': ", std::strerror(errno));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

std::vector<std::string> GatherAddresses(const std::string& coordinator, int size, const std::string& own,
                                         std::chrono::milliseconds timeout) {
  zmq::socket_t router(ZmqContext(), zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 5000);  // the answers must leave before we return
  if (const TransportKeys* keys = ProcessTransportKeys()) SecureServerSocket(router, *keys);
  else CheckPlaintextListen(coordinator);
  try {
    router.bind(Endpoint(coordinator));
  } catch (const zmq::error_t& e) {
    Fail(Code::kUnavailable, "rank 0 cannot listen at the coordinator ", coordinator, ": ", e.what(),
         " (is another job using the port? set DFLOW_COORDINATOR to a free one)");
  }
  std::vector<std::string> addresses(size), identities(size);
  addresses[0] = own;
  int missing = size - 1;
  const auto deadline = Clock::now() + timeout;
  while (missing > 0) {
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(std::min<long>(Left(deadline), 200)));
    if (!(item.revents & ZMQ_POLLIN)) {
      if (Left(deadline) > 0) continue;
      std::string absent;
      for (int r = 1; r < size; ++r)
        if (addresses[r].empty()) absent += StrCat(absent.empty() ? "" : ", ", r);
      Fail(Code::kUnavailable, "rank 0 waited ", timeout.count(), " ms at the coordinator ", coordinator,
           " and rank(s) ", absent, " of ", size, " never came");
    }
    zmq::message_t identity, payload;
    if (!router.recv(identity) || !identity.more() || !router.recv(payload)) continue;
    while (payload.more() && router.recv(payload)) {
    }  // a stray multi-frame message: drop the rest
    std::string why;
    std::optional<Hello> hello = ReadHello(payload.to_string(), why);
    if (!hello || hello->rank < 1 || hello->rank >= size || hello->size != size) {
      std::cerr << "coordinator " << coordinator << ": ignored a message that is not a hello of rank 1.."
                << size - 1 << " of " << size << " (" << (hello ? "wrong rank or size" : why) << ")" << std::endl;
      continue;
    }
    if (!addresses[hello->rank].empty())
      Fail(Code::kInvalidArgument, "two processes say they are rank ", hello->rank, " (", addresses[hello->rank],
           " and ", hello->address, "): the launcher's ranks conflict");
    addresses[hello->rank] = hello->address;
    identities[hello->rank] = identity.to_string();
    --missing;
  }
  const std::string answer = Json{{"addresses", addresses}}.dump();
  for (int r = 1; r < size; ++r) {
    router.send(zmq::buffer(identities[r]), zmq::send_flags::sndmore);
    router.send(zmq::buffer(answer), zmq::send_flags::none);
  }
  return addresses;
}

std::vector<std::string> SendAddress(const std::string& coordinator, int rank, int size, const std::string& own,
                                     std::chrono::milliseconds timeout) {
  zmq::socket_t dealer(ZmqContext(), zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  if (const TransportKeys* keys = ProcessTransportKeys()) SecureClientSocket(dealer, *keys);
  dealer.connect(Endpoint(coordinator));  // ZeroMQ retries until rank 0 listens
  dealer.send(zmq::buffer(Json{{"rank", rank}, {"size", size}, {"address", own}}.dump()), zmq::send_flags::none);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, timeout);
  if (!(item.revents & ZMQ_POLLIN))
    Fail(Code::kUnavailable, "rank ", rank, " waited ", timeout.count(), " ms for rank 0 at the coordinator ",
         coordinator, " and got no answer (is rank 0 running, and is that its address?)");
  zmq::message_t reply;
  (void)dealer.recv(reply);
  Json answer = ParseJson<Json>(reply.to_string(), "the coordinator's answer");
  if (!answer.is_object() || !answer.contains("addresses") || !answer["addresses"].is_array() ||
      answer["addresses"].size() != static_cast<size_t>(size))
    Fail(Code::kInvalidArgument, "the coordinator ", coordinator, " answered ", DescribeJson(answer),
         ", not ", size, " addresses");
  std::vector<std::string> addresses;
  for (const Json& a : answer["addresses"]) {
    if (!a.is_string()) Fail(Code::kInvalidArgument, "the coordinator ", coordinator, " answered a non-address");
    addresses.push_back(a.get<std::string>());
  }
  if (addresses[rank] != own)
    Fail(Code::kInvalidArgument, "the coordinator ", coordinator, " gives rank ", rank, " the address ",
         addresses[rank], ", not ", own, ": another job may be using the coordinator's port");
  return addresses;
}

}  // namespace dflow::dist
