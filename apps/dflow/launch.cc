// dflow launch -n N [--ps P] [--model-parts G] [--strategy ps|ring] [--base-port PORT]
//              [--grace S] [--failure-wait S]
//              [--elastic [--min-workers A] [--max-workers B] [--rendezvous HOST:PORT]]
//              [--max-restarts K] -- PROGRAM ARGS
// Starts N workers (and P parameter servers, and G model-part tasks per
// worker: job "part", apps/common/model_split.h) of PROGRAM on this machine, each
// with DFLOW_CLUSTER describing the cluster on 127.0.0.1 and its own task,
// and DFLOW_STRATEGY; see task_processes.h for how they are supervised.
// With --elastic it also hosts the elastic rendezvous (dist/training/elastic.h)
// and gives each worker DFLOW_ELASTIC (its address), DFLOW_ELASTIC_ID and
// DFLOW_ELASTIC_RANK; a worker that dies is reported and the others go on.
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/common/cli_checks.h"
#include "apps/dflow/commands.h"
#include "apps/dflow/task_processes.h"
#include "dist/training/elastic.h"
#include "dist/training/ps_training.h"

namespace dflow::cli {
namespace {

struct LaunchSettings {
  int workers = 1;
  int ps = 0;
  int model_parts = 0;   // per worker
  std::string strategy;  // empty: "ps" when there are parameter servers, else "ring"
  int base_port = 2222;
  double grace_seconds = 3;
  double failure_wait_seconds = 10;
  double interrupt_wait_seconds = 60;
  bool failure_wait_given = false;  // else the strategy's DefaultFailureWaitSeconds
  bool elastic = false;
  int max_restarts = 0;
  int min_workers = 1;
  int max_workers = 0;  // 0: -n
  std::string rendezvous = "127.0.0.1:0";
  std::vector<std::string> command;
};

// How long the others get to report a failed task before they are
// stopped. Under parameter servers the chief notices a dead worker only
// when a step has waited its step timeout (PsTrainingOptions), so the wait
// must outlast that by a margin, or the chief's report is lost to the stop.
double DefaultFailureWaitSeconds(const std::string& strategy) {
  constexpr double kRingSeconds = 10, kReportMarginSeconds = 5;
  if (strategy != "ps") return kRingSeconds;
  const auto step_timeout = dist::PsTrainingOptions{}.step_timeout;
  return std::chrono::duration<double>(step_timeout).count() + kReportMarginSeconds;
}

void Validate(LaunchSettings& s) {
  DFLOW_REQUIRE(s.workers >= 1, "launch: -n must be at least 1, got ", s.workers);
  // Each task is a process: an absurd count would fork until the machine refuses.
  DFLOW_REQUIRE(s.workers <= apps::kMaxWorkers, "launch: -n must be at most ", apps::kMaxWorkers, ", got ",
                s.workers);
  DFLOW_REQUIRE(s.ps >= 0 && s.ps <= apps::kMaxWorkers, "launch: --ps must be 0 to ", apps::kMaxWorkers, ", got ",
                s.ps);
  DFLOW_REQUIRE(s.model_parts >= 0 && s.model_parts <= 8, "launch: --model-parts must be 0 to 8, got ",
                s.model_parts);
  if (s.strategy.empty()) s.strategy = s.ps > 0 ? "ps" : "ring";
  DFLOW_REQUIRE(s.strategy == "ps" || s.strategy == "ring", "launch: unknown --strategy '",
                s.strategy, "' (expected ps or ring)");
  DFLOW_REQUIRE(s.strategy != "ps" || s.ps > 0,
                "launch: --strategy ps needs at least one parameter server (--ps P)");
  DFLOW_REQUIRE(s.strategy != "ring" || s.ps == 0,
                "launch: --strategy ring takes no parameter servers, got --ps ", s.ps);
  int last_port = s.base_port + s.workers * (1 + s.model_parts) + s.ps - 1;
  DFLOW_REQUIRE(s.base_port >= 1 && last_port <= 65535, "launch: ports ", s.base_port, "..",
                last_port, " are not all in 1..65535 (--base-port)");
  DFLOW_REQUIRE(s.grace_seconds >= 0, "launch: --grace must be >= 0, got ", s.grace_seconds);
  DFLOW_REQUIRE(s.failure_wait_seconds >= 0, "launch: --failure-wait must be >= 0, got ",
                s.failure_wait_seconds);
  DFLOW_REQUIRE(s.interrupt_wait_seconds >= 0, "launch: --interrupt-wait must be >= 0, got ",
                s.interrupt_wait_seconds);
  if (!s.failure_wait_given) s.failure_wait_seconds = DefaultFailureWaitSeconds(s.strategy);
  if (s.max_workers == 0) s.max_workers = s.workers;
  DFLOW_REQUIRE(s.max_restarts >= 0 && s.max_restarts <= 1000, "launch: --max-restarts must be 0 to 1000, got ",
                s.max_restarts);
  DFLOW_REQUIRE(s.max_restarts == 0 || ((s.elastic || s.strategy == "ps") && s.model_parts == 0),
                "launch: --max-restarts needs a job that takes a worker back: --strategy ps or --elastic "
                "(the fixed ring fails with its first lost worker)");
  if (s.elastic) {
    DFLOW_REQUIRE(s.strategy == "ring" && s.model_parts == 0,
                  "launch: --elastic is for ring training (no --ps, no --model-parts)");
    DFLOW_REQUIRE(s.min_workers >= 1 && s.min_workers <= s.workers && s.workers <= s.max_workers &&
                      s.max_workers <= apps::kMaxWorkers,
                  "launch: --elastic needs 1 <= --min-workers (", s.min_workers, ") <= -n (", s.workers,
                  ") <= --max-workers (", s.max_workers, ") <= ", apps::kMaxWorkers);
  }
  DFLOW_REQUIRE(!s.command.empty(), "launch: no program to run (give it after --)");
}

// Workers take base_port.., then the parameter servers, then the model parts.
nlohmann::ordered_json ClusterJobs(const LaunchSettings& s) {
  nlohmann::ordered_json jobs;
  int port = s.base_port;
  for (int i = 0; i < s.workers; ++i) jobs["worker"].push_back(StrCat("127.0.0.1:", port++));
  for (int i = 0; i < s.ps; ++i) jobs["ps"].push_back(StrCat("127.0.0.1:", port++));
  for (int i = 0; i < s.workers * s.model_parts; ++i) jobs["part"].push_back(StrCat("127.0.0.1:", port++));
  return jobs;
}

// `rendezvous`: the elastic rendezvous's address, or "" without --elastic.
std::vector<TaskLaunch> Tasks(const LaunchSettings& s, const std::string& rendezvous) {
  nlohmann::ordered_json jobs = ClusterJobs(s);
  std::vector<TaskLaunch> tasks;
  auto add = [&](const std::string& job, int index) {
    nlohmann::ordered_json task = {{"type", job}, {"index", index}};
    nlohmann::ordered_json cluster = {{"cluster", jobs}, {"task", task}};
    tasks.push_back({StrCat(job, ":", index), job == "worker",
                     {{"DFLOW_CLUSTER", cluster.dump()}, {"DFLOW_STRATEGY", s.strategy}}});
    if (rendezvous.empty()) return;
    tasks.back().environment["DFLOW_ELASTIC"] = rendezvous;
    tasks.back().environment["DFLOW_ELASTIC_ID"] = tasks.back().label;
    tasks.back().environment["DFLOW_ELASTIC_RANK"] = std::to_string(index);
  };
  for (int i = 0; i < s.workers; ++i) add("worker", i);
  for (int i = 0; i < s.ps; ++i) add("ps", i);
  for (int i = 0; i < s.workers * s.model_parts; ++i) add("part", i);
  return tasks;
}

void Launch(LaunchSettings settings) {
  Validate(settings);
  auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
  LaunchTimes times{ms(settings.grace_seconds), ms(settings.failure_wait_seconds),
                    ms(settings.interrupt_wait_seconds)};
  std::unique_ptr<dist::RendezvousServer> rendezvous;
  std::string rendezvous_address;
  if (settings.elastic) {
    rendezvous = std::make_unique<dist::RendezvousServer>(
        settings.rendezvous, dist::RendezvousOptions{.min_workers = settings.min_workers,
                                                     .max_workers = settings.max_workers,
                                                     .initial_workers = settings.workers});
    const std::string host = settings.rendezvous.substr(0, settings.rendezvous.rfind(':'));
    rendezvous_address = StrCat(host == "0.0.0.0" ? std::string("127.0.0.1") : host, ":", rendezvous->port());
    std::cerr << "dflow launch: elastic rendezvous at " << rendezvous_address << " (" << settings.min_workers
              << " to " << settings.max_workers << " workers); another worker joins when started with DFLOW_ELASTIC="
              << rendezvous_address << std::endl;
  }
  // The launcher sees a worker die first: the rendezvous need not wait for
  // its heartbeats to stop (nor, at start-up, for it to join).
  LaunchPolicy policy{.elastic = settings.elastic, .max_restarts = settings.max_restarts, .on_worker_lost = {}};
  if (rendezvous) policy.on_worker_lost = [&](const std::string& label) { rendezvous->WorkerLost(label); };
  LaunchOutcome outcome = RunTasks(Tasks(settings, rendezvous_address), settings.command, times, policy);
  if (outcome.interrupted_by)
    Fail(Code::kCancelled, "launch: interrupted by signal ", outcome.interrupted_by, " (",
         strsignal(outcome.interrupted_by), "); stopped every task");
  if (!outcome.ok && rendezvous && rendezvous->failure())
    Fail(Code::kUnavailable, "launch: the elastic job stopped: ", *rendezvous->failure(), " (", outcome.failure, ")");
  if (!outcome.ok) Fail(Code::kUnavailable, "launch: ", outcome.failure);
}

}  // namespace

void AddLaunchCommand(CLI::App& app) {
  auto settings = std::make_shared<LaunchSettings>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Run PROGRAM as N workers (and P parameter servers) on this machine, each with "
                "DFLOW_CLUSTER and DFLOW_STRATEGY set; stop all if one fails");
  cmd->add_option("-n,--workers", settings->workers, "Worker processes")->required();
  cmd->add_option("--ps", settings->ps, "Parameter server processes");
  cmd->add_option("--model-parts", settings->model_parts,
                  "Model-part tasks per worker (job \"part\"), for a program's model parallelism");
  cmd->add_option("--strategy", settings->strategy,
                  "ps or ring (default: ps with --ps, else ring)");
  cmd->add_option("--base-port", settings->base_port,
                  "First port; workers take the first N, parameter servers the next P, model parts the rest");
  cmd->add_option("--grace", settings->grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when stopping tasks");
  CLI::Option* failure_wait = cmd->add_option("--failure-wait", settings->failure_wait_seconds,
                  "After a task fails, seconds the others get to exit by themselves (reporting "
                  "the dead task) before they are stopped (default 10; with --strategy ps 15, longer than the "
                  "chief's 10 s step timeout; 0: stop them at once)");
  cmd->add_option("--interrupt-wait", settings->interrupt_wait_seconds,
                  "After SIGINT/SIGTERM (forwarded to every task), seconds the tasks get to finish a step and "
                  "save before they are killed (default 60; a second signal kills them at once)");
  cmd->add_flag("--elastic", settings->elastic,
               "Elastic ring training: host a rendezvous; a worker that dies is left out and the others go on, "
               "a worker started later (with DFLOW_ELASTIC set to the rendezvous) joins");
  cmd->add_option("--max-restarts", settings->max_restarts,
                  "Start a worker that fails again, up to this many times in all (with --strategy ps or "
                  "--elastic: the job takes it back)");
  cmd->add_option("--min-workers", settings->min_workers,
                  "--elastic: the job stops when fewer workers are left (default 1)");
  cmd->add_option("--max-workers", settings->max_workers,
                  "--elastic: workers beyond this many wait to join (default -n)");
  cmd->add_option("--rendezvous", settings->rendezvous,
                  "--elastic: where the rendezvous listens (default 127.0.0.1 on a free port)");
  cmd->add_option("command", settings->command, "-- PROGRAM ARGS...");
  cmd->callback([settings, failure_wait] {
    settings->failure_wait_given = failure_wait->count() > 0;
    Launch(*settings);
  });
}

}  // namespace dflow::cli
