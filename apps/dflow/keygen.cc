// dflow keygen --out DIR [--join CLUSTER_DIR]: the CURVE keys of a cluster
// (dist/transport/curve.h). Without --join, DIR becomes a cluster's folder:
// its server pair, a client pair, and that client on the allow-list. With
// --join, DIR is a further client's folder: the cluster's server public key
// and a new client pair, whose public key goes onto CLUSTER_DIR's allow-list.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "apps/dflow/commands.h"
#include "dist/transport/curve.h"
#include "graph/status.h"

namespace dflow::cli {
namespace {

namespace fs = std::filesystem;

struct KeygenSettings {
  std::string out, join;
};

void Keygen(const KeygenSettings& s) {
  DFLOW_REQUIRE(!fs::exists(s.out) || fs::is_empty(s.out), "keygen: ", s.out,
                " is not empty; keys are never overwritten");
  const dist::CurveKeyPair client = dist::NewCurveKeyPair();
  if (s.join.empty()) {
    dist::WriteCurveKeyPair(s.out, "server", dist::NewCurveKeyPair());
    dist::WriteCurveKeyPair(s.out, "client", client);
    fs::create_directories(s.out + "/clients");
    dist::WriteCurveKeyPair(s.out + "/clients", "client", {client.public_key, client.secret_key});
    fs::remove(s.out + "/clients/client.key_secret");  // the allow-list holds public keys only
    std::cout << "keygen: the cluster's keys are in " << s.out
              << " (give every process DFLOW_CURVE_KEYS=" << s.out << " or the cluster document's \"curve_keys\")\n";
    return;
  }
  const std::string server_public = dist::ReadCurveKey(s.join + "/server.key");
  // Z85 has '/' and '.': name the allowed key by its place in the list.
  int taken = 0;
  for (const auto& entry : fs::directory_iterator(s.join + "/clients")) taken += entry.path().extension() == ".key";
  const std::string name = StrCat("client-", taken + 1);
  fs::create_directories(s.out);
  dist::WriteCurveKeyPair(s.out, "client", client);
  dist::WriteCurveKeyPair(s.join + "/clients", name, {client.public_key, client.secret_key});
  fs::remove(s.join + "/clients/" + name + ".key_secret");
  std::ofstream(s.out + "/server.key") << server_public << "\n";
  std::cout << "keygen: a client of " << s.join << " in " << s.out << "; its key is allowed as " << s.join
            << "/clients/" << name << ".key\n";
}

}  // namespace

void AddKeygenCommand(CLI::App& app) {
  auto settings = std::make_shared<KeygenSettings>();
  CLI::App* cmd = app.add_subcommand("keygen", "Make CURVE keys for a cluster's encrypted, authenticated transport");
  cmd->add_option("--out", settings->out, "New folder for the keys")->required();
  cmd->add_option("--join", settings->join, "A cluster's key folder: make a further client of it");
  cmd->callback([settings] { Keygen(*settings); });
}

}  // namespace dflow::cli
