// Send/Recv between two processes on loopback, side by side with raw ZeroMQ.
// The parent spawns itself as the peer ("--peer PORT"); each process is one
// task with a MessageServer, a ZmqRendezvous and a Channel to the other. For
// each tensor size it measures, alternating in one run:
//   dflow: the parent starts RecvAsync for every key (as a step's Recvs all
//          start at once), then the peer's rendezvous Sends them all: each
//          is pushed at once, as one SendTensor message whose tensor frame
//          is sent from the tensor's buffer, and the received tensor keeps
//          the frame's bytes (from 64 KB up; smaller ones are copied);
//   raw:   the peer PUSHes the same bytes (zero-copy, from one buffer) to a PULL.
// And small-tensor round-trip latency, sequential: a 4-byte tensor Sent to
// the peer, whose Recv callback Sends one back, the next started from the
// parent's Recv callback (the thread the tensor arrives on), against raw
// REQ/REP of 4 bytes (the next sent by the thread that received the reply).
// Two more figures explain the gap: the tensor handed to a waiting thread
// instead (as the executor hands a Recv's completion to its pool), and an
// empty request and reply through Channel and MessageServer.
// Prints medians of 7 runs (alternating which side goes first) and the
// median and range of the per-run ratios.
// `bench_zmq_sendrecv PORT bandwidth` (or `latency`) runs one part alone;
// `alone-dflow` or `alone-raw` runs only that side at 1 MB (for perf stat).
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

#include "dist/runtime/zmq_rendezvous.h"
#include "dist/transport/zmq_server.h"

using namespace dflow;
using namespace dflow::dist;
using Clock = std::chrono::steady_clock;

extern char** environ;

namespace {

const std::string kPeerTask = "/job:bench/replica:0/task:0";
const std::string kPeerDevice = kPeerTask + "/device:CPU:0";
const std::string kHereTask = "/job:bench/replica:0/task:1";
const std::string kHereDevice = kHereTask + "/device:CPU:0";
constexpr int64_t kIncarnation = 1;  // both tasks'

Tensor BytesTensor(size_t bytes) {
  Tensor t(DType::kUInt8, Shape({static_cast<int64_t>(bytes)}));
  std::memset(t.raw_data(), 7, bytes);
  return t;
}

RendezvousKey Key(const std::string& from, const std::string& to, const std::string& name, int64_t step) {
  return {from, kIncarnation, to, name, step};
}

// Tensor `i` of `bytes` the peer streams to the parent in run `run` (the step).
RendezvousKey StreamKey(size_t bytes, size_t i, int run) {
  return Key(kPeerDevice, kHereDevice, std::to_string(bytes) + ":" + std::to_string(i), run);
}

// Ping-pong `i` of a latency chain: "tag:run:i"; the ping goes to the peer, the pong back.
std::string PingName(const std::string& tag, int run, int i) {
  return tag + ":" + std::to_string(run) + ":" + std::to_string(i);
}
RendezvousKey PingKey(const std::string& name, int run) { return Key(kHereDevice, kPeerDevice, "ping" + name, run); }
RendezvousKey PongKey(const std::string& name, int run) { return Key(kPeerDevice, kHereDevice, "pong" + name, run); }

// One task of the bench: its server delivers the tensors pushed to it into
// its rendezvous, whose Sends go to the other task through `channel`.
struct Task {
  Channel channel;
  std::shared_ptr<ZmqRendezvous> rendezvous;
  MessageServer server;
  Task(const std::string& name, int port, int other_port)
      : channel("other task", StrCat("127.0.0.1:", other_port)),
        rendezvous(std::make_shared<ZmqRendezvous>(name, kIncarnation,
                                                   [this](const std::string&) -> Channel& { return channel; })),
        server(StrCat("127.0.0.1:", port), [this](Message message, MessageServer::Respond respond) {
          if (message.type != MessageType::kSendTensor) return respond(Message());  // a bare round trip
          rendezvous->DeliverFromPeer(KeyFromWire(message.text), std::move(message.tensors.at(0).value));
        }) {}
  ~Task() { server.Stop(); }  // no delivery into a rendezvous being destroyed
};

// The peer echoes `count` pings: each ping's Recv callback Sends its pong
// and starts the next Recv.
struct Echo {
  Task& task;
  std::string tag;
  int count, run;
  int next = 0;
  void StartNext() {
    if (next == count) return delete this;
    std::string name = PingName(tag, run, next++);
    task.rendezvous->RecvAsync(PingKey(name, run),
                               [this, name](std::optional<Error> error, Tensor value) {
                                 if (error) std::abort();
                                 task.rendezvous->Send(PongKey(name, run), value);
                                 StartNext();
                               });
  }
};

// The peer: pushes tensors on demand (through its rendezvous, or raw), echoes
// pings, and answers REQ/REP pings. Commands come on a REP socket.
int RunPeer(int port) {
  Task task(kPeerTask, port, port + 3);
  zmq::socket_t control(ZmqContext(), zmq::socket_type::rep), push(ZmqContext(), zmq::socket_type::push);
  control.bind(StrCat("tcp://127.0.0.1:", port + 1));
  push.bind(StrCat("tcp://127.0.0.1:", port + 2));
  std::vector<char> buffer(size_t{64} << 20, 7);
  std::map<size_t, Tensor> tensors;  // one per size, shared like the raw side's one buffer
  while (true) {
    zmq::message_t request;
    (void)control.recv(request);
    std::string text = request.to_string();
    if (text == "quit") break;
    char verb[16] = {}, tag[16] = {};
    size_t bytes = 0, count = 0;
    int run = 0;
    if (text.starts_with("echo ")) {  // echo COUNT RUN TAG
      std::sscanf(text.c_str(), "%15s %zu %d %15s", verb, &count, &run, tag);
      (new Echo{task, tag, static_cast<int>(count), run})->StartNext();
    } else if (text.starts_with("push ") || text.starts_with("send ")) {  // push|send BYTES COUNT RUN
      std::sscanf(text.c_str(), "%15s %zu %zu %d", verb, &bytes, &count, &run);
    } else {  // a ping: echo it
      control.send(request, zmq::send_flags::none);
      continue;
    }
    control.send(zmq::str_buffer("ok"), zmq::send_flags::none);
    if (text.starts_with("push "))
      for (size_t i = 0; i < count; ++i) {
        zmq::message_t frame(buffer.data(), bytes, nullptr, nullptr);  // zero-copy
        push.send(frame, zmq::send_flags::none);
      }
    if (text.starts_with("send ")) {
      if (!tensors.count(bytes)) tensors[bytes] = BytesTensor(bytes);
      for (size_t i = 0; i < count; ++i)
        task.rendezvous->Send(StreamKey(bytes, i, run), tensors[bytes]);
    }
  }
  control.send(zmq::str_buffer("bye"), zmq::send_flags::none);
  return 0;
}

struct Parent {
  Task task;
  zmq::socket_t control{ZmqContext(), zmq::socket_type::req};
  zmq::socket_t pull{ZmqContext(), zmq::socket_type::pull};

  explicit Parent(int port) : task(kHereTask, port + 3, port) {
    control.connect(StrCat("tcp://127.0.0.1:", port + 1));
    pull.connect(StrCat("tcp://127.0.0.1:", port + 2));
  }
  std::string Ask(const std::string& text) {
    control.send(zmq::buffer(text), zmq::send_flags::none);
    zmq::message_t reply;
    (void)control.recv(reply);
    return reply.to_string();
  }
};

double RawBandwidth(Parent& parent, size_t bytes, size_t count) {
  auto start = Clock::now();
  parent.Ask(StrCat("push ", bytes, " ", count));
  for (size_t i = 0; i < count; ++i) {
    zmq::message_t frame;
    (void)parent.pull.recv(frame);
  }
  return bytes * count / std::chrono::duration<double>(Clock::now() - start).count();
}

// `count` Recvs waiting, then the peer Sends them all.
double DflowBandwidth(Parent& parent, size_t bytes, size_t count, int run) {
  std::atomic<size_t> finished{0};
  std::promise<void> all_done;
  auto start = Clock::now();
  for (size_t i = 0; i < count; ++i)
    parent.task.rendezvous->RecvAsync(StreamKey(bytes, i, run),
                                      [&, bytes, count](std::optional<Error> error, Tensor value) {
                                        if (error || value.TotalBytes() != bytes) std::abort();
                                        value = Tensor();  // free the block before the next one comes
                                        if (finished.fetch_add(1) + 1 == count) all_done.set_value();
                                      });
  parent.Ask(StrCat("send ", bytes, " ", count, " ", run));
  all_done.get_future().wait();
  return bytes * count / std::chrono::duration<double>(Clock::now() - start).count();
}

double RawLatencyUs(Parent& parent, int count) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) parent.Ask("ping");
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// Sequential ping-pongs: each ping is Sent from the previous pong's Recv callback.
struct PingChain {
  Parent& parent;
  std::string tag;
  int count, run;
  int next = 0;
  std::promise<void> all_done;
  void StartNext() {
    if (next == count) return all_done.set_value();
    std::string name = PingName(tag, run, next++);
    ZmqRendezvous& rendezvous = *parent.task.rendezvous;
    rendezvous.RecvAsync(PongKey(name, run), [this](std::optional<Error> error, Tensor) {
      if (error) std::abort();
      StartNext();
    });
    rendezvous.Send(PingKey(name, run), Tensor::Scalar<float>(1));
  }
};

double DflowLatencyUs(Parent& parent, int count, int run) {
  parent.Ask(StrCat("echo ", count, " ", run, " l"));
  auto start = Clock::now();
  PingChain chain{parent, "l", count, run, 0, {}};
  chain.StartNext();
  chain.all_done.get_future().wait();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// The same, but each pong goes from the Recv callback to the thread that
// waits for it, which Sends the next ping.
double DflowHandedLatencyUs(Parent& parent, int count, int run) {
  parent.Ask(StrCat("echo ", count, " ", run, " w"));
  ZmqRendezvous& rendezvous = *parent.task.rendezvous;
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    std::promise<void> done;
    std::string name = PingName("w", run, i);
    rendezvous.RecvAsync(PongKey(name, run), [&](std::optional<Error> error, Tensor) {
      if (error) std::abort();
      done.set_value();
    });
    rendezvous.Send(PingKey(name, run), Tensor::Scalar<float>(1));
    done.get_future().wait();
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / count;
}

// The transport alone: an empty request and reply through Channel and MessageServer.
double ChannelLatencyUs(Parent& parent, int count) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    Message request;
    request.type = MessageType::kGetStatus;
    parent.task.channel.CallAndWait(std::move(request));
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
  Parent peer(port);
  constexpr int kRuns = 7;
  if (part == "alone-dflow" || part == "alone-raw") {
    // One side alone, 7 x 5,000 tensors of 1 MB, for `perf stat` or `time`:
    // on two shared cores the interleaved ratio swings with the scheduler.
    std::vector<double> rates;
    for (int run = 0; run < kRuns; ++run)
      rates.push_back(part == "alone-raw" ? RawBandwidth(peer, 1 << 20, 5000)
                                          : DflowBandwidth(peer, 1 << 20, 5000, run));
    std::printf("1 MB, %s alone: %.1f MB/s (median of %d runs)\n", part.c_str() + 6, Median(rates) / 1e6, kRuns);
  }
  if (part == "all" || part == "bandwidth")
    std::printf("%-10s %14s %14s %14s\n", "tensor", "dflow MB/s", "raw MB/s", "ratio (runs)");
  for (auto [bytes, count] : {std::pair<size_t, size_t>{4 << 10, 20000}, {1 << 20, 5000}, {64 << 20, 16}}) {
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
