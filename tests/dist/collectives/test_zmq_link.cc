// ZmqLink: the collectives over ZeroMQ give the in-process link's bits; Recv
// timeouts and dead peers fail naming the ranks; order per (sender, tag) holds.
#include <catch2/catch.hpp>

#include <thread>

#include "dist/collectives/communicator.h"
#include "dist/collectives/in_process_link.h"
#include "dist/collectives/zmq_link.h"
#include "dist/transport/zmq_server.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::Bytes;
using dist::ZmqLink;
using Clock = std::chrono::steady_clock;

// N links on free ports of 127.0.0.1, connected to each other.
std::vector<std::unique_ptr<ZmqLink>> MakeLinks(int n) {
  std::vector<std::unique_ptr<ZmqLink>> links;
  std::vector<std::string> addresses;
  for (int r = 0; r < n; ++r) {
    links.push_back(std::make_unique<ZmqLink>(r, n, "127.0.0.1:0"));
    addresses.push_back(links.back()->address());
  }
  for (auto& link : links) link->Connect(addresses);
  return links;
}

// Runs `body` on one thread per link; returns each rank's error message.
std::vector<std::string> RunOn(std::vector<dist::PointToPoint*> links,
                               const std::function<void(dist::Communicator&)>& body) {
  std::vector<std::string> errors(links.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < links.size(); ++r)
    threads.emplace_back([&, r] {
      dist::Communicator comm(*links[r], {.timeout = std::chrono::milliseconds(10000)});
      try {
        body(comm);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// Values whose float sum depends on the order, so bits show the order used.
Tensor RankValues(int rank, int64_t n) {
  Tensor t(DType::kFloat32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = (rank == 0 ? 1e8f : 1.0f) + 0.37f * i + rank;
  return t;
}

TEST_CASE("ZmqLink: all-reduce and broadcast give the in-process link's bits", "[zmq_link]") {
  const int ranks = 3;
  auto zmq_links = MakeLinks(ranks);
  dist::InProcessNetwork network(ranks);
  std::vector<dist::PointToPoint*> over_zmq, in_process;
  for (int r = 0; r < ranks; ++r) {
    over_zmq.push_back(zmq_links[r].get());
    in_process.push_back(&network.endpoint(r));
  }
  for (int64_t n : {0, 1, 7, 1001, 100003}) {
    auto run = [&](std::vector<dist::PointToPoint*> links) {
      std::vector<Tensor> sums(ranks), copies(ranks);
      auto errors = RunOn(links, [&](dist::Communicator& comm) {
        Tensor t = RankValues(comm.rank(), n);
        comm.AllReduce("grads", t);
        sums[comm.rank()] = t;
        Tensor b = RankValues(comm.rank() + 5, n);
        comm.Broadcast("init", b);
        copies[comm.rank()] = b;
      });
      for (auto& e : errors) REQUIRE(e.empty());
      return std::make_pair(sums, copies);
    };
    auto [zmq_sums, zmq_copies] = run(over_zmq);
    auto [sums, copies] = run(in_process);
    for (int r = 0; r < ranks; ++r) {
      INFO("n " << n << ", rank " << r);
      CHECK(zmq_sums[r].Equals(sums[r]));
      CHECK(zmq_copies[r].Equals(copies[r]));
      CHECK(zmq_copies[r].Equals(RankValues(5, n)));
    }
  }
}

TEST_CASE("ZmqLink: a Recv timeout names both ranks and the tag", "[zmq_link]") {
  auto links = MakeLinks(2);
  auto start = Clock::now();
  try {
    links[1]->Recv(0, "weights/7", Clock::now() + std::chrono::milliseconds(200));
    FAIL("Recv returned");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Contains("rank 1") && Contains("rank 0") && Contains("'weights/7'"));
  }
  CHECK(Clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("ZmqLink: messages from one rank under one tag arrive in order", "[zmq_link]") {
  auto links = MakeLinks(2);
  const int count = 2000;
  for (int i = 0; i < count; ++i) {
    links[0]->Send(1, "a", Bytes{static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8)});
    links[0]->Send(1, "b", Bytes(i % 5, static_cast<uint8_t>(i)));
  }
  links[1]->Send(1, "self", Bytes{42});
  auto deadline = Clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < count; ++i) {
    Bytes a = links[1]->Recv(0, "a", deadline);
    REQUIRE(a == Bytes{static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8)});
  }
  for (int i = 0; i < count; ++i) REQUIRE(links[1]->Recv(0, "b", deadline) == Bytes(i % 5, static_cast<uint8_t>(i)));
  CHECK(links[1]->Recv(1, "self", deadline) == Bytes{42});
}

TEST_CASE("ZmqLink: a rank that is gone fails Recv and Send naming it, without a hang",
          "[zmq_link]") {
  auto links = MakeLinks(2);
  links[0]->Send(1, "warmup", Bytes{1});
  CHECK(links[1]->Recv(0, "warmup", Clock::now() + std::chrono::seconds(5)) == Bytes{1});
  links[0].reset();
  auto start = Clock::now();
  try {
    links[1]->Recv(0, "grads", Clock::now() + std::chrono::seconds(30));
    FAIL("Recv returned");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Contains("rank 0") && Contains("'grads'"));
  }
  CHECK(Clock::now() - start < std::chrono::seconds(10));
  // A send to the dead rank is queued, then its failure surfaces by name.
  links[1]->Send(0, "late", Bytes{2});
  auto give_up = Clock::now() + std::chrono::seconds(10);
  bool failed = false;
  while (!failed && Clock::now() < give_up) {
    try {
      links[1]->Send(0, "late", Bytes{3});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } catch (const Error& e) {
      failed = true;
      CHECK_THAT(e.what(), Contains("rank 0") && Contains("'late'"));
    }
  }
  CHECK(failed);
}

TEST_CASE("ZmqLink: ranks of different runs refuse each other at Connect, naming both", "[zmq_link]") {
  ZmqLink a(0, 2, "127.0.0.1:0", {.startup_timeout = std::chrono::seconds(10), .fingerprint = "run A"});
  ZmqLink b(1, 2, "127.0.0.1:0", {.startup_timeout = std::chrono::seconds(10), .fingerprint = "run B"});
  std::vector<std::string> addresses = {a.address(), b.address()};
  std::string error_b;
  std::thread other([&] {
    try {
      b.Connect(addresses);
    } catch (const Error& e) {
      error_b = e.what();
    }
  });
  try {
    a.Connect(addresses);
    FAIL("Connect accepted a rank of another run");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kFailedPrecondition);
    CHECK_THAT(e.what(), Contains("rank 0") && Contains("rank 1") && Contains("different runs"));
  }
  other.join();
  CHECK_THAT(error_b, Contains("different runs") && Contains("'run A'") && Contains("'run B'"));
}

TEST_CASE("ZmqLink: a rank that never starts fails Connect after the start-up timeout, by name",
          "[zmq_link]") {
  std::string nobody = ZmqLink(1, 2, "127.0.0.1:0").address();  // bound, then closed again
  ZmqLink a(0, 2, "127.0.0.1:0", {.startup_timeout = std::chrono::milliseconds(500)});
  auto start = Clock::now();
  try {
    a.Connect({a.address(), nobody});
    FAIL("Connect returned");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Contains("rank 1 (" + nobody) && Contains("waited 500 ms at start-up"));
  }
  CHECK(Clock::now() - start < std::chrono::seconds(10));  // a bound on the hang, not a speed test
}

TEST_CASE("ZmqLink: a busy port that answers wrongly is named as such, with the time it took",
          "[zmq_link]") {
  // Another dflow process on the peer's port: it answers every hello with an error.
  dist::MessageServer other("127.0.0.1:0", [](dist::Message request, dist::MessageServer::Respond respond) {
    respond(dist::Message::ErrorReply(request.request_id, Error(Code::kInvalidArgument, "not a link")));
  });
  const std::string busy = "127.0.0.1:" + std::to_string(other.port());
  ZmqLink a(0, 2, "127.0.0.1:0", {.startup_timeout = std::chrono::milliseconds(60000)});
  try {
    a.Connect({a.address(), busy});
    FAIL("Connect returned");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Contains("rank 1 (" + busy) && Contains("is the port busy") &&
                             !Contains("waited 60000 ms"));
  }
}

TEST_CASE("ZmqLink: bad start-up settings are refused", "[zmq_link]") {
  CHECK_THROWS_WITH(ZmqLink(0, 2, "127.0.0.1:0", {.rank_names = {"only one"}}), Contains("1 rank names for 2 ranks"));
  CHECK_THROWS_WITH(ZmqLink(0, 2, "127.0.0.1:0", {.startup_timeout = std::chrono::milliseconds(0)}),
                    Contains("start-up timeout must be positive"));
}

}  // namespace
}  // namespace dflow
