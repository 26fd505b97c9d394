// Where ranks that know only their rank and the world's size meet
// (dist/cluster_environment.h): rank 0 listens at the coordinator address,
// every other rank sends it its own address, and rank 0 answers each with
// every rank's address. Messages are JSON in single ZeroMQ frames
// (ROUTER at rank 0, DEALER at the others); anything else that reaches the
// coordinator's port is ignored with a line on stderr.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace dflow::dist {

// A TCP port that is free on this machine now (the kernel's pick).
int FreePort();
// This machine's address on the route to host:port (where the other ranks
// can reach it).
std::string LocalAddressToward(const std::string& host, int port);

// Rank 0: listens at `coordinator`, waits up to `timeout` for ranks 1..size-1
// and answers each; returns every rank's address ("host:port"), by rank.
// Fails naming the ranks that never came, or two ranks that claim one rank.
std::vector<std::string> GatherAddresses(const std::string& coordinator, int size, const std::string& own,
                                         std::chrono::milliseconds timeout);
// Rank `rank` > 0: sends `own` to the coordinator and waits up to `timeout`
// for every rank's address.
std::vector<std::string> SendAddress(const std::string& coordinator, int rank, int size, const std::string& own,
                                     std::chrono::milliseconds timeout);

}  // namespace dflow::dist
