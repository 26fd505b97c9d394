// LocalRendezvous: a tensor meets its Recv whichever comes first, each key
// is used once, and StartAbort wakes every waiter with the first error.
// And the key as SendTensor carries it between tasks: it round-trips, and a
// bad one is refused naming the field. A task's ZmqRendezvous pushes a Send
// for another task's device to that task, bit for bit, and refuses a key of
// another incarnation or a Send after an abort.
#include <catch2/catch.hpp>
#include <cstring>
#include <future>

#include "graph/local_rendezvous.h"
#include "dist/runtime/zmq_rendezvous.h"
#include "dist/transport/zmq_server.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

RendezvousKey Key(const std::string& tensor, int64_t step = 7) {
  return {"/job:a/replica:0/task:0/device:CPU:0", 3, "/job:a/replica:0/task:0/device:CPU:1", tensor, step};
}

// What a RecvAsync callback saw.
struct Received {
  int calls = 0;
  std::optional<Error> error;
  Tensor value;
  Rendezvous::RecvDone Callback() {
    return [this](std::optional<Error> e, Tensor v) {
      ++calls;
      error = std::move(e);
      value = std::move(v);
    };
  }
};

}  // namespace

TEST_CASE("a sent tensor meets its Recv whichever comes first", "[rendezvous]") {
  LocalRendezvous rendezvous;
  Received early, late;
  rendezvous.RecvAsync(Key("x:0"), early.Callback());
  CHECK(early.calls == 0);
  CHECK(rendezvous.num_pending() == 1);
  rendezvous.Send(Key("x:0"), Tensor::FromVector<float>({1, 2}));
  REQUIRE(early.calls == 1);
  CHECK_FALSE(early.error);
  ExpectEqual(early.value, Tensor::FromVector<float>({1, 2}));

  rendezvous.Send(Key("y:0"), Tensor::FromVector<float>({3}));
  rendezvous.RecvAsync(Key("y:0"), late.Callback());
  REQUIRE(late.calls == 1);
  ExpectEqual(late.value, Tensor::FromVector<float>({3}));
  CHECK(rendezvous.num_pending() == 0);
}

TEST_CASE("rendezvous keys differ by every field, and each is used once", "[rendezvous]") {
  // Declared first: two Recvs still wait at the end, and the rendezvous's
  // destructor calls them back (cancelled) before these go out of scope.
  Received other_step, restarted;
  LocalRendezvous rendezvous;
  rendezvous.Send(Key("x:0", 1), Tensor::FromVector<float>({1}));
  rendezvous.RecvAsync(Key("x:0", 2), other_step.Callback());
  CHECK(other_step.calls == 0);  // step 2 does not take step 1's tensor
  RendezvousKey other_incarnation = Key("x:0", 1);
  other_incarnation.send_device_incarnation = 4;
  rendezvous.RecvAsync(other_incarnation, restarted.Callback());
  CHECK(restarted.calls == 0);
  ExpectError([&] { rendezvous.Send(Key("x:0", 1), Tensor::FromVector<float>({1})); },
              Code::kInvalidArgument, "sent twice");
  Received first, second;
  rendezvous.RecvAsync(Key("x:0", 1), first.Callback());
  rendezvous.RecvAsync(Key("x:0", 1), second.Callback());
  CHECK_FALSE(first.error);
  REQUIRE(second.error);
  CHECK(second.error->message().find("received twice") != std::string::npos);
}

TEST_CASE("StartAbort wakes every waiter with the first error", "[rendezvous]") {
  LocalRendezvous rendezvous;
  Received a, b, after;
  rendezvous.RecvAsync(Key("a:0"), a.Callback());
  rendezvous.RecvAsync(Key("b:0"), b.Callback());
  rendezvous.StartAbort(Error(Code::kInvalidArgument, "bad shape on CPU:1"));
  rendezvous.StartAbort(Error(Code::kCancelled, "a later error"));
  for (Received* r : {&a, &b}) {
    REQUIRE(r->calls == 1);
    REQUIRE(r->error);
    CHECK(r->error->code() == Code::kInvalidArgument);
    CHECK(r->error->message() == "bad shape on CPU:1");
  }
  rendezvous.RecvAsync(Key("c:0"), after.Callback());
  REQUIRE(after.error);
  CHECK(after.error->message() == "bad shape on CPU:1");
  ExpectError([&] { rendezvous.Send(Key("d:0"), Tensor::FromVector<float>({1})); },
              Code::kInvalidArgument, "bad shape on CPU:1");
  REQUIRE(rendezvous.abort_error());
  CHECK(rendezvous.abort_error()->code() == Code::kInvalidArgument);
}

TEST_CASE("a destroyed rendezvous fails the Recvs still waiting", "[rendezvous]") {
  Received waiting;
  {
    LocalRendezvous rendezvous;
    rendezvous.RecvAsync(Key("a:0"), waiting.Callback());
  }
  REQUIRE(waiting.calls == 1);
  REQUIRE(waiting.error);
  CHECK(waiting.error->code() == Code::kCancelled);
}

TEST_CASE("a rendezvous key crosses the wire intact, and a bad one is refused", "[rendezvous]") {
  using Catch::Matchers::Contains;
  RendezvousKey key = Key("^node/with:odd;chars", -12);
  key.send_device_incarnation = int64_t{1} << 62;
  std::string wire = dist::KeyToWire(key);
  RendezvousKey back = dist::KeyFromWire(wire);
  CHECK(back.ToString() == key.ToString());
  CHECK(back.step_id == -12);
  CHECK(back.send_device_incarnation == int64_t{1} << 62);

  CHECK_THROWS_WITH(dist::KeyFromWire(""), Contains("bad rendezvous key: field 'send_device' is cut short"));
  CHECK_THROWS_WITH(dist::KeyFromWire(wire.substr(0, wire.size() - 1)), Contains("field 'step_id' is cut short"));
  CHECK_THROWS_WITH(dist::KeyFromWire(wire + "x"), Contains("1 trailing bytes"));
  std::string long_name = wire;
  long_name[0] = '\xff';  // send_device's length: 0x..ff, past the frame
  CHECK_THROWS_WITH(dist::KeyFromWire(long_name), Contains("field 'send_device'"));
  std::string huge_length = wire;
  huge_length[1] = '\x7f';  // 0x7f.. > 1024
  CHECK_THROWS_WITH(dist::KeyFromWire(huge_length), Contains("the limit is 1024"));
  key.tensor_name.assign(2000, 'x');
  CHECK_THROWS_WITH(dist::KeyToWire(key), Contains("'tensor_name' has 2000 bytes"));
}

TEST_CASE("a Send for another task's device is pushed to that task at once", "[rendezvous]") {
  using Catch::Matchers::Contains;
  std::promise<dist::Message> pushed;
  dist::MessageServer receiver("127.0.0.1:0", [&](dist::Message message, dist::MessageServer::Respond) {
    pushed.set_value(std::move(message));
  });
  dist::Channel channel("/job:a/replica:0/task:1", StrCat("127.0.0.1:", receiver.port()));
  auto rendezvous = std::make_shared<dist::ZmqRendezvous>(
      "/job:a/replica:0/task:0", 3, [&](const std::string& task) -> dist::Channel& {
        CHECK(task == "/job:a/replica:0/task:1");
        return channel;
      });
  RendezvousKey key{"/job:a/replica:0/task:0/device:CPU:0", 3, "/job:a/replica:0/task:1/device:CPU:0", "x:0", 7};
  Tensor value = Tensor::FromVector<float>({1.5f, -0.0f, 3e-38f});
  rendezvous->Send(key, value);
  auto arrived = pushed.get_future();
  REQUIRE(arrived.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  dist::Message message = arrived.get();
  CHECK(message.type == dist::MessageType::kSendTensor);
  CHECK(dist::KeyFromWire(message.text).ToString() == key.ToString());
  REQUIRE(message.tensors.size() == 1);
  CHECK(std::memcmp(message.tensors[0].value.raw_data(), value.raw_data(), value.TotalBytes()) == 0);

  RendezvousKey stale = key;
  stale.send_device_incarnation = 4;
  stale.tensor_name = "y:0";
  CHECK_THROWS_WITH(rendezvous->Send(stale, value), Contains("incarnation 3") && Contains("incarnation 4"));
  rendezvous->StartAbort(Error(Code::kCancelled, "stopped"));
  key.tensor_name = "z:0";
  CHECK_THROWS_WITH(rendezvous->Send(key, value), Contains("task /job:a/replica:0/task:0: stopped"));
}
