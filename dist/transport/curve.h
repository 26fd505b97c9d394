// Authenticated, encrypted transport: ZeroMQ's CURVE mechanism (CurveZMQ,
// elliptic-curve keys through libsodium) on every socket dflow opens —
// worker servers and their clients, ring links, parameter-server channels,
// the start-up handshake and the ranks' coordinator.
//
// A cluster's keys live in one folder (`dflow keygen --out DIR` makes it),
// named by the cluster document's "curve_keys" or by DFLOW_CURVE_KEYS:
//
//   DIR/server.key         the cluster's server public key (every client needs it)
//   DIR/server.key_secret  its secret key (every process that serves; mode 0600)
//   DIR/client.key         this process's client public key
//   DIR/client.key_secret  its secret key (mode 0600)
//   DIR/clients/*.key      the client public keys servers accept (the allow-list)
//
// Keys are Z85 text, 40 characters. A server checks every connecting client
// against the allow-list (a ZAP handler): a client not on it is refused, and
// the refusal is logged with its key and address; a plaintext client or one
// with a wrong server key fails its handshake and is never heard. Without
// keys, dflow refuses to listen anywhere but on loopback unless
// DFLOW_INSECURE=1 (`--insecure`) says so, and then warns.
#pragma once

#include <optional>
#include <set>
#include <string>

#include <zmq.hpp>

namespace dflow::dist {

struct CurveKeyPair {
  std::string public_key, secret_key;  // Z85
};

// A fresh key pair.
CurveKeyPair NewCurveKeyPair();
// Writes DIR/NAME.key and DIR/NAME.key_secret (0600); kAlreadyExists for a
// pair that is there.
void WriteCurveKeyPair(const std::string& dir, const std::string& name, const CurveKeyPair& pair);
// A Z85 key from its file; kInvalidArgument names a file that holds none.
std::string ReadCurveKey(const std::string& path);

struct TransportKeys {
  std::string dir;                       // where they came from
  std::optional<CurveKeyPair> server;    // the cluster's server pair, when this process may serve
  std::string server_public_key;         // what clients expect of every server
  CurveKeyPair client;                   // this process's client pair
  std::set<std::string> allowed_clients; // public keys
};

// The folder's keys (layout above); errors name the missing or bad file.
TransportKeys LoadTransportKeys(const std::string& dir);

// This process's keys: those set by SetProcessTransportKeys (a cluster
// document with "curve_keys"), else DFLOW_CURVE_KEYS's, else none.
const TransportKeys* ProcessTransportKeys();
void SetProcessTransportKeys(const std::string& dir);

// Makes `socket` a CURVE server checking clients against keys.allowed_clients.
void SecureServerSocket(zmq::socket_t& socket, const TransportKeys& keys);
// Makes `socket` a CURVE client of the cluster's servers.
void SecureClientSocket(zmq::socket_t& socket, const TransportKeys& keys);

// Before listening on "host:port" in the clear: refuses (kInvalidArgument)
// anything but loopback unless DFLOW_INSECURE=1, which warns instead.
void CheckPlaintextListen(const std::string& address);

}  // namespace dflow::dist
