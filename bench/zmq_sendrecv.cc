// Send/Recv between two processes on loopback, side by side with raw ZeroMQ.
// The parent spawns itself as the peer ("--peer PORT"). For each tensor size
// it measures, alternating in one run:
//   dflow: the consumer's ZmqRendezvous::RecvAsync asks the producer's task
//          for each key (16 requests in flight, each done callback starting
//          the next, as a step's Recvs are all started at once); the
//          producer's Send put the tensor into its own table; the reply
//          carries the raw bytes, which the received tensor keeps (from 64 KB
//          up; smaller ones are copied).
//   raw:   the peer PUSHes the same bytes (zero-copy, from one buffer) to a PULL.
// And small-tensor round-trip latency, sequential: RecvAsync of a 4-byte
// tensor, the next started from the done callback (the thread the tensor
// arrives on), against raw REQ/REP of 4 bytes (the next sent by the thread
// that received the reply). Two more figures explain the gap: the tensor
// handed to a waiting thread instead (as the executor hands a Recv's
// completion to its pool), and an empty request through Channel alone.
// Prints medians of 7 runs (alternating which side goes first) and the
// median and range of the per-run ratios.
// `bench_zmq_sendrecv PORT bandwidth` (or `latency`) runs one part alone.
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "dist/zmq_rendezvous.h"
#include "dist/zmq_server.h"

using namespace dflow;
using namespace dflow::dist;
using Clock = std::chrono::steady_clock;

extern char** environ;

namespace {

const std::string kPeerTask = "/job:bench/replica:0/task:0";
const std::string kPeerDevice = kPeerTask + "/device:CPU:0";
const std::string kHereDevice = "/job:bench/replica:0/task:1/device:CPU:0";

// Tensor names carry their byte size: "<bytes>:<run>:<i>".
size_t BytesOfName(const std::string& name) { return std::stoull(name.substr(0, name.find(':'))); }

Tensor BytesTensor(size_t bytes) {
  Tensor t(DType::kUInt8, Shape({static_cast<int64_t>(bytes)}));
  std::memset(t.raw_data(), 7, bytes);
  return t;
}

// The peer: serves RecvTensor from its rendezvous (Sending each key first,
// as its producer would have: one tensor per size, shared like the raw
// side's one buffer), raw PUSH on demand, and REQ/REP pings.
int RunPeer(int port) {
  std::map<size_t, Tensor> tensors;  // by byte size; only the server thread uses it
  auto rendezvous = std::make_shared<ZmqRendezvous>(kPeerTask, 1, [](const std::string&) -> Channel& {
    Fail(Code::kInternal, "the bench peer receives nothing");
  });
  MessageServer server(StrCat("127.0.0.1:", port), [&](Message request, MessageServer::Respond respond) {
    if (request.type == MessageType::kGetStatus) return respond(Message());  // a bare round trip
    RendezvousKey key = KeyFromWire(request.text);
    size_t bytes = BytesOfName(key.tensor_name);
    if (!tensors.count(bytes)) tensors[bytes] = BytesTensor(bytes);
    rendezvous->Send(key, tensors[bytes]);
    rendezvous->ServeRecv(key, [respond](std::optional<Error> error, Tensor value) {
      Message reply;
      reply.tensors.push_back({"t", std::move(value)});
      respond(std::move(reply));
    });
  });
  zmq::socket_t control(ZmqContext(), zmq::socket_type::rep), push(ZmqContext(), zmq::socket_type::push);
  control.bind(StrCat("tcp://127.0.0.1:", port + 1));
  push.bind(StrCat("tcp://127.0.0.1:", port + 2));
  std::vector<char> buffer(size_t{64} << 20, 7);
  while (true) {
    zmq::message_t request;
    (void)control.recv(request);
    std::string text = request.to_string();
    if (text == "quit") break;
    if (!text.starts_with("push ")) {  // a ping: echo it
      control.send(request, zmq::send_flags::none);
      continue;
    }
    size_t bytes = 0, count = 0;
    std::sscanf(text.c_str(), "push %zu %zu", &bytes, &count);
    control.send(zmq::str_buffer("ok"), zmq::send_flags::none);
    for (size_t i = 0; i < count; ++i) {
      zmq::message_t frame(buffer.data(), bytes, nullptr, nullptr);  // zero-copy
      push.send(frame, zmq::send_flags::none);
    }
  }
  control.send(zmq::str_buffer("bye"), zmq::send_flags::none);
  return 0;
}

struct Peer {
  int port;
  zmq::socket_t control{ZmqContext(), zmq::socket_type::req};
  zmq::socket_t pull{ZmqContext(), zmq::socket_type::pull};
  Channel channel;
  std::shared_ptr<ZmqRendezvous> rendezvous;

  explicit Peer(int p) : port(p), channel(kPeerTask, StrCat("127.0.0.1:", p)) {
    control.connect(StrCat("tcp://127.0.0.1:", port + 1));
    pull.connect(StrCat("tcp://127.0.0.1:", port + 2));
    rendezvous = std::make_shared<ZmqRendezvous>("/job:bench/replica:0/task:1", 1,
                                                 [this](const std::string&) -> Channel& { return channel; });
  }
  std::string Ask(const std::string& text) {
    control.send(zmq::buffer(text), zmq::send_flags::none);
    zmq::message_t reply;
    (void)control.recv(reply);
    return reply.to_string();
  }
};

double RawBandwidth(Peer& peer, size_t bytes, size_t count) {
  auto start = Clock::now();
  peer.Ask(StrCat("push ", bytes, " ", count));
  for (size_t i = 0; i < count; ++i) {
    zmq::message_t frame;
    (void)peer.pull.recv(frame);
  }
  return bytes * count / std::chrono::duration<double>(Clock::now() - start).count();
}

// `count` RecvAsync calls with at most `window` in flight; each callback starts the next.
struct Pipeline {
  Peer& peer;
  size_t bytes, count;
  int run;
  std::atomic<size_t> started{0};
  std::atomic<size_t> finished{0};
  std::promise<void> all_done;
  void StartNext() {
    size_t i = started.fetch_add(1);
    if (i >= count) return;
    RendezvousKey key{kPeerDevice, 1, kHereDevice, StrCat(bytes, ":", run, ":", i), run};
    peer.rendezvous->RecvAsync(key, [this](std::optional<Error> error, Tensor value) {
      if (error || value.TotalBytes() != bytes) std::abort();
      value = Tensor();  // free the block before asking for the next one
      if (finished.fetch_add(1) + 1 == count) return all_done.set_value();
      StartNext();
    });
  }
};

double DflowBandwidth(Peer& peer, size_t bytes, size_t count, int run, size_t window = 16) {
  Pipeline pipeline{peer, bytes, count, run};
  auto start = Clock::now();
  for (size_t i = 0; i < window; ++i) pipeline.StartNext();
  pipeline.all_done.get_future().wait();
  return bytes * count / std::chrono::duration<double>(Clock::now() - start).count();
}

double RawLatencyUs(Peer& peer, int count) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) peer.Ask("ping");
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// Sequential: each Recv is started from the previous one's done callback.
struct LatencyChain {
  Peer& peer;
  int count, run;
  int next = 0;
  std::promise<void> all_done;
  void StartNext() {
    if (next == count) return all_done.set_value();
    RendezvousKey key{kPeerDevice, 1, kHereDevice, StrCat(4, ":l", run, ":", next++), run};
    peer.rendezvous->RecvAsync(key, [this](std::optional<Error> error, Tensor) {
      if (error) std::abort();
      StartNext();
    });
  }
};

double DflowLatencyUs(Peer& peer, int count, int run) {
  auto start = Clock::now();
  LatencyChain chain{peer, count, run};
  chain.StartNext();
  chain.all_done.get_future().wait();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// The same, but each tensor goes from the done callback to the thread that
// waits for it.
double DflowHandedLatencyUs(Peer& peer, int count, int run) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    std::promise<void> done;
    RendezvousKey key{kPeerDevice, 1, kHereDevice, StrCat(4, ":w", run, ":", i), run};
    peer.rendezvous->RecvAsync(key, [&](std::optional<Error> error, Tensor) {
      if (error) std::abort();
      done.set_value();
    });
    done.get_future().wait();
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// The transport alone: an empty request and reply through Channel and MessageServer.
double ChannelLatencyUs(Peer& peer, int count) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    Message request;
    request.type = MessageType::kGetStatus;
    peer.channel.CallAndWait(std::move(request));
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

pid_t SpawnPeer(const char* self, int port) {
  std::string port_arg = std::to_string(port);
  std::vector<char*> argv = {const_cast<char*>(self), const_cast<char*>("--peer"), port_arg.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) std::exit(1);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  // Both sides run in these processes, so both get the malloc settings of
  // dflow's own programs; DFLOW_BENCH_GLIBC_DEFAULTS=1 keeps glibc's own
  // (the peer inherits the environment).
  const char* defaults = std::getenv("DFLOW_BENCH_GLIBC_DEFAULTS");
  if (!defaults || std::string(defaults) != "1") KeepFreedMemoryForReceives();
  if (argc == 3 && std::string(argv[1]) == "--peer") return RunPeer(std::atoi(argv[2]));
  int port = argc > 1 ? std::atoi(argv[1]) : 25550;
  // An optional second argument runs one part alone (for profiling).
  std::string part = argc > 2 ? argv[2] : "all";
  pid_t child = SpawnPeer(argv[0], port);
  Peer peer(port);
  constexpr int kRuns = 7;
  if (part != "latency")
    std::printf("%-10s %14s %14s %14s\n", "tensor", "dflow MB/s", "raw MB/s", "ratio (runs)");
  for (auto [bytes, count] : {std::pair<size_t, size_t>{4 << 10, 20000}, {1 << 20, 1000}, {64 << 20, 16}}) {
    if (part != "all" && part != "bandwidth") break;
    std::vector<double> dflow_rates, raw_rates, ratios;
    for (int run = 0; run < kRuns; ++run) {
      // In ABBA order, so that neither side always runs on the machine
      // (caches, heaps, sockets) the other one just left.
      if (run % 2 == 0) {
        raw_rates.push_back(RawBandwidth(peer, bytes, count));
        dflow_rates.push_back(DflowBandwidth(peer, bytes, count, run));
      } else {
        dflow_rates.push_back(DflowBandwidth(peer, bytes, count, run));
        raw_rates.push_back(RawBandwidth(peer, bytes, count));
      }
      ratios.push_back(dflow_rates.back() / raw_rates.back());
    }
    auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
    std::printf("%-10zu %14.1f %14.1f %7.2fx (%.2f-%.2f)\n", bytes, Median(dflow_rates) / 1e6,
                Median(raw_rates) / 1e6, Median(ratios), *low, *high);
  }
  std::vector<double> dflow_us, raw_us, channel_us, handed_us;
  int met = 0;
  for (int run = 0; run < kRuns && (part == "all" || part == "latency"); ++run) {
    raw_us.push_back(RawLatencyUs(peer, 2000));
    dflow_us.push_back(DflowLatencyUs(peer, 2000, run));
    met += dflow_us.back() <= 1.2 * raw_us.back() + 20;
    handed_us.push_back(DflowHandedLatencyUs(peer, 2000, run));
    channel_us.push_back(ChannelLatencyUs(peer, 2000));
  }
  if (!dflow_us.empty())
    std::printf("round trip, 4 bytes: dflow %.1f us, raw REQ/REP %.1f us (target <= %.1f us; met in %d "
                "of %d runs); handed to a waiting thread %.1f us; empty Channel call %.1f us\n",
                Median(dflow_us), Median(raw_us), 1.2 * Median(raw_us) + 20, met, kRuns,
                Median(handed_us), Median(channel_us));
  peer.Ask("quit");
  waitpid(child, nullptr, 0);
  return 0;
}
