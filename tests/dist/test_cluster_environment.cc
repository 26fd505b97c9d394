// The launchers' variables (dist/cluster_environment.h): which one wins,
// TF_CONFIG's jobs as dflow's, Slurm's hostlists, partial and conflicting
// variables named, the coordinator each launcher implies, and ranks that
// meet at a real coordinator (threads of this process over loopback).
#include <catch2/catch.hpp>

#include <future>
#include <zmq.hpp>

#include "dist/cluster_environment.h"
#include "dist/coordinator.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::dist;
using dflow::testing::ExpectError;

namespace {

const char* kDflowCluster = R"({"cluster": {"worker": ["127.0.0.1:2222"]}, "task": {"type": "worker", "index": 0}})";

void ExpectBadEnvironment(const Environment& env, const std::string& message) {
  ExpectError([&] { DetectLauncher(env); }, Code::kInvalidArgument, message);
}

}  // namespace

TEST_CASE("the first launcher's variables win, in the documented order", "[dist][cluster_environment]") {
  CHECK_FALSE(DetectLauncher({}));
  Environment env = {{"DFLOW_CLUSTER", kDflowCluster},
                     {"TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}})"},
                     {"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  CHECK(DetectLauncher(env)->source == "DFLOW_CLUSTER");
  env.erase("DFLOW_CLUSTER");
  CHECK(DetectLauncher(env)->source == "TF_CONFIG");
  CHECK(DetectLauncher(env)->spec->self() == TaskId{"worker", 1});
  env.erase("TF_CONFIG");
  std::optional<LauncherCluster> torchrun = DetectLauncher(env);
  CHECK(torchrun->source == "RANK/WORLD_SIZE (torchrun)");
  CHECK_FALSE(torchrun->spec);
  CHECK(torchrun->rank == 1);
  CHECK(torchrun->size == 3);
  CHECK(torchrun->coordinator == "127.0.0.1:29500");
  // torchrun's agent may hold MASTER_PORT itself.
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  CHECK(DetectLauncher(env)->coordinator == "127.0.0.1:29501");
}

TEST_CASE("TF_CONFIG: the chief is worker 0, TensorFlow's workers follow it", "[dist][cluster_environment]") {
  ClusterSpec spec = ClusterFromTfConfig(R"({
    "cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"], "ps": ["p:1"], "evaluator": ["e:1"]},
    "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  CHECK(spec.jobs().at("worker") == std::vector<std::string>{"c:1", "w0:1", "w1:1"});
  CHECK(spec.jobs().at("ps") == std::vector<std::string>{"p:1"});
  CHECK(spec.num_tasks("evaluator") == 0);
  CHECK(spec.self() == TaskId{"worker", 2});
  CHECK(ClusterFromTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "chief", "index": 0}})")
            .self() == TaskId{"worker", 0});
  // Without a chief, worker 0 is the chief (MultiWorkerMirroredStrategy's rule).
  CHECK(ClusterFromTfConfig(R"({"cluster": {"worker": ["w:1", "v:1"]}, "task": {"type": "worker", "index": 1}})")
            .self() == TaskId{"worker", 1});
  // Kubeflow's sparse form, when it names every task.
  ClusterSpec sparse = ClusterFromTfConfig(
      R"({"sparseCluster": {"worker": {"1": "w1:1", "0": "w0:1"}, "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})");
  CHECK(sparse.jobs().at("worker") == std::vector<std::string>{"w0:1", "w1:1"});

  auto bad = [](const std::string& text, const std::string& message) {
    INFO(text);
    ExpectError([&] { ClusterFromTfConfig(text); }, Code::kInvalidArgument, message);
  };
  bad(R"({"sparseCluster": {"worker": {"1": "w1:1"}}, "task": {"type": "worker", "index": 1}})",
      "job 'worker' does not name task 0");
  bad(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}})", "an evaluator");
  bad(R"({"clsuter": {"worker": ["w:1"]}})", "unknown field \"clsuter\"");
  bad(R"({"cluster": {"chief": ["a:1", "b:1"]}})", "2 chief tasks");
  bad(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 3}})", "task.index 3 is out of range");
  bad(R"({"cluster": {"worker": ["w:1"]}, "sparseCluster": {}})", "exactly one of");
  bad("[", "TF_CONFIG");
}

TEST_CASE("Slurm hostlists expand with their zero padding", "[dist][cluster_environment]") {
  CHECK(ExpandHostlist("n[01-04,07],gpu5") == std::vector<std::string>{"n01", "n02", "n03", "n04", "n07", "gpu5"});
  CHECK(ExpandHostlist("rack[1-2]-n[8-9]") ==
        std::vector<std::string>{"rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"});
  CHECK(ExpandHostlist("node7") == std::vector<std::string>{"node7"});
  CHECK(ExpandHostlist("n[098-101]") == std::vector<std::string>{"n098", "n099", "n100", "n101"});
  for (auto [list, message] : {std::pair{"n[1-", "unbalanced '['"}, std::pair{"n1]", "unbalanced ']'"},
                               std::pair{"n[3-1]", "bad range '3-1'"}, std::pair{"a,,b", "empty entry"},
                               std::pair{"n[x]", "bad range 'x'"}, std::pair{"n[0-99999999]", "bad range"}}) {
    INFO(list);
    ExpectError([&] { ExpandHostlist(list); }, Code::kInvalidArgument, message);
  }
}

TEST_CASE("partial and conflicting launcher variables are named", "[dist][cluster_environment]") {
  ExpectBadEnvironment({{"RANK", "0"}}, "RANK is set but WORLD_SIZE is not");
  ExpectBadEnvironment({{"WORLD_SIZE", "2"}}, "WORLD_SIZE is set but RANK is not");
  ExpectBadEnvironment({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
                       "RANK=2 and WORLD_SIZE=2 conflict");
  ExpectBadEnvironment({{"RANK", "one"}, {"WORLD_SIZE", "2"}}, "RANK must be an integer, got 'one'");
  ExpectBadEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}},
                       "MASTER_ADDR is set but MASTER_PORT is not");
  ExpectBadEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                        {"DFLOW_NUM_PS", "2"}},
                       "DFLOW_NUM_PS=2 conflicts with WORLD_SIZE=2");
  ExpectBadEnvironment({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, "set DFLOW_COORDINATOR");
  ExpectBadEnvironment({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"DFLOW_COORDINATOR", "nohost"}},
                       "DFLOW_COORDINATOR: address 'nohost' is not \"host:port\"");
  ExpectBadEnvironment({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}}, "SLURM_PROCID is set but SLURM_NTASKS is not");
  // A batch script has SLURM_PROCID too, but it is no rank of a step.
  CHECK_FALSE(DetectLauncher({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}));
}

TEST_CASE("each launcher implies where its ranks meet", "[dist][cluster_environment]") {
  std::optional<LauncherCluster> slurm =
      DetectLauncher({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_ID", "4242"},
                      {"SLURM_STEP_NODELIST", "cn[07-08]"}});
  CHECK(slurm->source == "SLURM_PROCID/SLURM_NTASKS (Slurm)");
  CHECK(slurm->coordinator.substr(0, 5) == "cn07:");
  // Every Open MPI rank on this machine: loopback, a port from the job's name.
  Environment mpi = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"PMIX_NAMESPACE", "prterun-host-1234@1"}};
  std::optional<LauncherCluster> local = DetectLauncher(mpi);
  CHECK(local->coordinator.substr(0, 10) == "127.0.0.1:");
  CHECK(local->coordinator == DetectLauncher(mpi)->coordinator);
  mpi["DFLOW_COORDINATOR"] = "head:7000";
  CHECK(DetectLauncher(mpi)->coordinator == "head:7000");
  CHECK(DetectLauncher(mpi)->coordinator_source == "DFLOW_COORDINATOR");
}

TEST_CASE("ranks meet at the coordinator and each gets the whole cluster", "[dist][cluster_environment]") {
  const std::string coordinator = "127.0.0.1:" + std::to_string(FreePort());
  // A stray client first: the coordinator ignores it.
  zmq::context_t context;
  zmq::socket_t stray(context, zmq::socket_type::dealer);
  stray.set(zmq::sockopt::linger, 0);
  stray.connect("tcp://" + coordinator);
  stray.send(zmq::str_buffer("garbage"), zmq::send_flags::none);
  std::vector<std::future<ClusterSpec>> ranks;
  for (int rank = 0; rank < 3; ++rank)
    ranks.push_back(std::async(std::launch::async, [&, rank] {
      LauncherCluster launcher;
      launcher.rank = rank;
      launcher.size = 3;
      launcher.num_ps = 1;
      launcher.coordinator = coordinator;
      return MeetAtCoordinator(launcher, std::chrono::seconds(20));
    }));
  std::vector<ClusterSpec> specs;
  for (auto& rank : ranks) specs.push_back(rank.get());
  CHECK(specs[0].self() == TaskId{"ps", 0});
  CHECK(specs[1].self() == TaskId{"worker", 0});
  CHECK(specs[2].self() == TaskId{"worker", 1});
  for (const ClusterSpec& spec : specs) {
    CHECK(spec.jobs() == specs[0].jobs());
    CHECK(spec.num_tasks("ps") == 1);
    CHECK(spec.num_tasks("worker") == 2);
    CHECK(spec.Address({"worker", 1}).substr(0, 10) == "127.0.0.1:");
  }
}

TEST_CASE("rank 0 names the ranks that never came", "[dist][cluster_environment]") {
  LauncherCluster launcher;
  launcher.rank = 0;
  launcher.size = 3;
  launcher.coordinator = "127.0.0.1:" + std::to_string(FreePort());
  ExpectError([&] { MeetAtCoordinator(launcher, std::chrono::milliseconds(300)); }, Code::kUnavailable,
              "rank(s) 1, 2 of 3 never came");
  launcher.rank = 1;
  ExpectError([&] { MeetAtCoordinator(launcher, std::chrono::milliseconds(300)); }, Code::kUnavailable,
              "rank 1 waited 300 ms for rank 0");
}
