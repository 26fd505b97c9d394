#include "dist/transport/curve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "dist/transport/zmq_transport.h"
#include "graph/status.h"

namespace dflow::dist {
namespace {

namespace fs = std::filesystem;

constexpr size_t kZ85KeyLength = 40;

bool IsZ85Key(const std::string& text) {
  if (text.size() != kZ85KeyLength) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    if (errno == EEXIST) Fail(Code::kAlreadyExists, path, " exists; keys are never overwritten");
    Fail(Code::kInvalidArgument, "cannot create ", path, ": ", std::strerror(errno));
  }
  std::string line = text + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  close(fd);
  DFLOW_REQUIRE(written, "cannot write ", path);
}

// The ZAP handler (ZeroMQ's RFC 27) of the process's context: every CURVE
// server socket names a domain, and each domain has its allow-list.
class Authenticator {
 public:
  static Authenticator& Get() {
    static auto* authenticator = new Authenticator();  // serves until the process ends
    return *authenticator;
  }

  // The domain whose allow-list is `allowed` (one per distinct list).
  std::string Domain(const TransportKeys& keys) {
    std::lock_guard lock(mu_);
    for (const auto& [domain, entry] : domains_)
      if (entry.allowed == keys.allowed_clients) return domain;
    std::string domain = StrCat("dflow-", domains_.size());
    domains_[domain] = {keys.allowed_clients, keys.dir};
    return domain;
  }

 private:
  struct Entry {
    std::set<std::string> allowed;
    std::string dir;
  };

  Authenticator() : socket_(ZmqContext(), zmq::socket_type::rep) {
    socket_.bind("inproc://zeromq.zap.01");  // before any CURVE server accepts a connection
    std::thread([this] { Serve(); }).detach();
  }

  void Serve() {
    while (true) {
      std::vector<zmq::message_t> frames;
      try {
        zmq::message_t frame;
        do {
          if (!socket_.recv(frame)) break;
          frames.emplace_back(frame.data(), frame.size());
        } while (frame.more());
      } catch (const zmq::error_t&) {
        return;  // the context is ending
      }
      if (frames.size() < 6) continue;  // not a ZAP request; REP still needs a reply
      Reply(frames);
    }
  }

  void Reply(const std::vector<zmq::message_t>& request) {
    const std::string request_id = request[1].to_string(), domain = request[2].to_string();
    const std::string address = request[3].to_string(), mechanism = request[5].to_string();
    std::string key;
    if (mechanism == "CURVE" && request.size() >= 7 && request[6].size() == 32) {
      char text[kZ85KeyLength + 1] = {};
      zmq_z85_encode(text, static_cast<const uint8_t*>(request[6].data()), 32);
      key = text;
    }
    bool allowed = false;
    std::string dir;
    {
      std::lock_guard lock(mu_);
      auto it = domains_.find(domain);
      if (it != domains_.end()) {
        allowed = !key.empty() && it->second.allowed.count(key) > 0;
        dir = it->second.dir;
      }
    }
    if (!allowed)
      std::cerr << "dflow transport: refused a " << mechanism << " client"
                << (key.empty() ? std::string() : " with key " + key) << " from " << address << " (not in "
                << dir << "/clients)" << std::endl;
    const std::string status = allowed ? "200" : "400";
    const std::string text = allowed ? "OK" : "client key not allowed";
    socket_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(key), zmq::send_flags::sndmore);  // the user id: the client's key
    socket_.send(zmq::str_buffer(""), zmq::send_flags::none);
  }

  zmq::socket_t socket_;
  std::mutex mu_;
  std::map<std::string, Entry> domains_;
};

std::mutex g_keys_mu;
std::optional<TransportKeys> g_keys;
bool g_keys_resolved = false;

}  // namespace

CurveKeyPair NewCurveKeyPair() {
  char public_key[kZ85KeyLength + 1] = {}, secret_key[kZ85KeyLength + 1] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    Fail(Code::kUnimplemented, "this ZeroMQ has no CURVE support (built without libsodium)");
  return {public_key, secret_key};
}

void WriteCurveKeyPair(const std::string& dir, const std::string& name, const CurveKeyPair& pair) {
  fs::create_directories(dir);
  WriteFile(StrCat(dir, "/", name, ".key_secret"), pair.secret_key, 0600);
  WriteFile(StrCat(dir, "/", name, ".key"), pair.public_key, 0644);
}

std::string ReadCurveKey(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail(Code::kNotFound, "cannot read the key file ", path);
  std::string key;
  std::getline(in, key);
  if (!IsZ85Key(key)) Fail(Code::kInvalidArgument, path, " holds no CURVE key (40 characters of Z85)");
  return key;
}

TransportKeys LoadTransportKeys(const std::string& dir) {
  TransportKeys keys;
  keys.dir = dir;
  keys.server_public_key = ReadCurveKey(dir + "/server.key");
  if (fs::exists(dir + "/server.key_secret"))
    keys.server = CurveKeyPair{keys.server_public_key, ReadCurveKey(dir + "/server.key_secret")};
  keys.client = {ReadCurveKey(dir + "/client.key"), ReadCurveKey(dir + "/client.key_secret")};
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir + "/clients", error))
    if (entry.path().extension() == ".key") keys.allowed_clients.insert(ReadCurveKey(entry.path().string()));
  if (keys.server && keys.allowed_clients.empty())
    Fail(Code::kInvalidArgument, dir, "/clients/ holds no client key: a server would refuse everyone");
  return keys;
}

const TransportKeys* ProcessTransportKeys() {
  std::lock_guard lock(g_keys_mu);
  if (!g_keys_resolved) {
    g_keys_resolved = true;
    const char* dir = std::getenv("DFLOW_CURVE_KEYS");
    if (dir && *dir) {
      g_keys = LoadTransportKeys(dir);
      std::cerr << "dflow transport: CURVE with the keys of " << dir << " (DFLOW_CURVE_KEYS)" << std::endl;
    }
  }
  return g_keys ? &*g_keys : nullptr;
}

void SetProcessTransportKeys(const std::string& dir) {
  TransportKeys keys = LoadTransportKeys(dir);
  std::lock_guard lock(g_keys_mu);
  if (!g_keys || g_keys->dir != dir)
    std::cerr << "dflow transport: CURVE with the keys of " << dir << " (the cluster document)" << std::endl;
  g_keys = std::move(keys);
  g_keys_resolved = true;
}

void SecureServerSocket(zmq::socket_t& socket, const TransportKeys& keys) {
  if (!keys.server)
    Fail(Code::kInvalidArgument, "this process has no server secret key (", keys.dir,
         "/server.key_secret): it may connect but not serve");
  socket.set(zmq::sockopt::zap_domain, Authenticator::Get().Domain(keys));
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, keys.server->secret_key);
}

void SecureClientSocket(zmq::socket_t& socket, const TransportKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.client.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.client.secret_key);
}

void CheckPlaintextListen(const std::string& address) {
  const std::string host = address.substr(0, address.rfind(':'));
  if (host == "127.0.0.1" || host == "localhost" || host == "[::1]" || host == "::1" || host.rfind("127.", 0) == 0)
    return;
  const char* insecure = std::getenv("DFLOW_INSECURE");
  if (insecure && std::string(insecure) == "1") {
    std::cerr << "dflow transport: WARNING: listening on " << address
              << " without CURVE (DFLOW_INSECURE=1): anyone who reaches it can run anything, in the clear"
              << std::endl;
    return;
  }
  Fail(Code::kInvalidArgument, "refusing to listen on ", address,
       " in the clear: anyone who reaches it could run any graph. Give the cluster CURVE keys (dflow keygen; "
       "DFLOW_CURVE_KEYS or the cluster document's \"curve_keys\"), or set DFLOW_INSECURE=1 (--insecure) to mean it");
}

}  // namespace dflow::dist
