// CURVE on the transport (dist/transport/curve.h): an authorised client is
// served; a client whose key is not on the allow-list (refused, and the
// refusal logged with its key), a plaintext client and a client that
// expects another server key all fail while the server keeps serving; the
// bytes on the wire, read by a relay between the two, hold no plaintext;
// keys refuse to be overwritten and bad key files are named; listening in
// the clear beyond loopback is refused unless DFLOW_INSECURE=1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "dist/transport/curve.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::dist;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

constexpr char kCanary[] = "a canary that must not cross in the clear";

// A cluster's key folder, as `dflow keygen --out` makes it.
struct KeyFolder {
  fs::path dir = fs::temp_directory_path() / StrCat("dflow-curve-", getpid(), "-", std::rand());
  KeyFolder() {
    WriteCurveKeyPair(dir.string(), "server", NewCurveKeyPair());
    CurveKeyPair client = NewCurveKeyPair();
    WriteCurveKeyPair(dir.string(), "client", client);
    fs::create_directories(dir / "clients");
    std::ofstream(dir / "clients" / "client.key") << client.public_key << "\n";
  }
  ~KeyFolder() { fs::remove_all(dir); }
  TransportKeys Load() const { return LoadTransportKeys(dir.string()); }
};

MessageServer::Handler EchoHandler() {
  return [](Message request, MessageServer::Respond respond) {
    Message reply;
    reply.text = request.text;
    respond(std::move(reply));
  };
}

Message Request(int64_t timeout_ms) {
  Message m;
  m.type = MessageType::kGetStatus;
  m.text = kCanary;
  m.deadline_ms = DeadlineIn(timeout_ms);
  return m;
}

bool Served(const MessageServer& server, const ChannelOptions& options) {
  Channel channel("/job:worker/replica:0/task:0", StrCat("127.0.0.1:", server.port()), options);
  try {
    return channel.CallAndWait(Request(1500)).text == kCanary;
  } catch (const Error&) {
    return false;
  }
}

// Relays one TCP connection from its own port to `target`, keeping every
// byte the client sent.
class Relay {
 public:
  explicit Relay(int target) : target_(target) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listener_, 1) == 0);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~Relay() {
    stop_ = true;
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    thread_.join();
  }
  int port() const { return port_; }
  std::string sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }

 private:
  void Run() {
    int client = accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_));
    if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    char buffer[65536];
    while (!stop_) {
      fd_set readable;
      FD_ZERO(&readable);
      FD_SET(client, &readable);
      FD_SET(server, &readable);
      timeval tick{0, 50000};
      if (select(std::max(client, server) + 1, &readable, nullptr, nullptr, &tick) <= 0) continue;
      for (auto [from, to] : {std::pair{client, server}, std::pair{server, client}}) {
        if (!FD_ISSET(from, &readable)) continue;
        ssize_t n = read(from, buffer, sizeof buffer);
        if (n <= 0) stop_ = true;
        if (n <= 0) break;
        if (from == client) {
          std::lock_guard lock(mu_);
          sent_.append(buffer, static_cast<size_t>(n));
        }
        if (write(to, buffer, static_cast<size_t>(n)) != n) stop_ = true;
      }
    }
    close(client);
    close(server);
  }

  int target_, listener_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string sent_;
};

// What a request through the relay put on the wire.
std::string Captured(const MessageServer& server, const ChannelOptions& options) {
  Relay relay(server.port());
  {
    Channel channel("/job:worker/replica:0/task:0", StrCat("127.0.0.1:", relay.port()), options);
    REQUIRE(channel.CallAndWait(Request(5000)).text == kCanary);
  }
  return relay.sent();
}

}  // namespace

TEST_CASE("CURVE serves the allowed clients alone, and the server keeps serving", "[zmq][curve]") {
  KeyFolder folder;
  TransportKeys keys = folder.Load();
  MessageServer server("127.0.0.1:0", EchoHandler(), &keys);
  CHECK(Served(server, {.keys = &keys}));

  // A client with a key of its own, not on the allow-list: refused and logged.
  TransportKeys stranger = keys;
  stranger.client = NewCurveKeyPair();
  std::stringstream log;
  std::streambuf* saved = std::cerr.rdbuf(log.rdbuf());
  const bool stranger_served = Served(server, {.keys = &stranger});
  std::cerr.rdbuf(saved);
  CHECK_FALSE(stranger_served);
  CHECK_THAT(log.str(), Contains("refused a CURVE client with key " + stranger.client.public_key));

  // In the clear, or expecting another server's key: the handshake fails.
  CHECK_FALSE(Served(server, {.plaintext = true}));
  TransportKeys impostor_view = keys;
  impostor_view.server_public_key = NewCurveKeyPair().public_key;
  CHECK_FALSE(Served(server, {.keys = &impostor_view}));

  CHECK(Served(server, {.keys = &keys}));  // still serving
}

TEST_CASE("under CURVE no plaintext crosses the wire", "[zmq][curve]") {
  KeyFolder folder;
  TransportKeys keys = folder.Load();
  MessageServer plain("127.0.0.1:0", EchoHandler(), nullptr);
  // The relay sees the canary in the clear (the control)...
  CHECK(Captured(plain, {.plaintext = true}).find(kCanary) != std::string::npos);
  MessageServer secure("127.0.0.1:0", EchoHandler(), &keys);
  // ...and not under CURVE.
  std::string wire = Captured(secure, {.keys = &keys});
  CHECK(wire.size() > 200);  // the handshake and the request did pass
  CHECK(wire.find(kCanary) == std::string::npos);
  CHECK(wire.find("CURVE") != std::string::npos);  // the mechanism's name is in the greeting
}

TEST_CASE("key files: never overwritten, bad ones named", "[curve]") {
  KeyFolder folder;
  testing::ExpectError([&] { WriteCurveKeyPair(folder.dir.string(), "server", NewCurveKeyPair()); },
                       Code::kAlreadyExists, "never overwritten");
  CHECK((fs::status(folder.dir / "server.key_secret").permissions() & fs::perms::group_all) == fs::perms::none);
  std::ofstream(folder.dir / "clients" / "broken.key") << "not a key\n";
  testing::ExpectError([&] { folder.Load(); }, Code::kInvalidArgument, "broken.key holds no CURVE key");
  fs::remove(folder.dir / "clients" / "broken.key");
  fs::remove(folder.dir / "clients" / "client.key");
  testing::ExpectError([&] { folder.Load(); }, Code::kInvalidArgument, "would refuse everyone");
}

TEST_CASE("listening beyond loopback in the clear needs DFLOW_INSECURE=1", "[curve]") {
  unsetenv("DFLOW_INSECURE");
  CheckPlaintextListen("127.0.0.1:2222");
  testing::ExpectError([] { CheckPlaintextListen("10.1.2.3:2222"); }, Code::kInvalidArgument,
                       "refusing to listen on 10.1.2.3:2222 in the clear");
  setenv("DFLOW_INSECURE", "1", 1);
  CheckPlaintextListen("10.1.2.3:2222");  // warns
  unsetenv("DFLOW_INSECURE");
}
