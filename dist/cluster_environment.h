// Where a process finds its cluster and its role: the variables that the
// launchers clusters already have set, so that dflow's workers run under
// them unchanged. In order, the first that is set wins:
//
//   DFLOW_CLUSTER     dflow's own document (dist/cluster.h; `dflow launch`)
//   TF_CONFIG         TensorFlow's, as Kubeflow's TFJob writes it: "cluster"
//                     (or "sparseCluster") and "task"; a "chief" task becomes
//                     worker 0 and TF's worker i becomes worker i + 1
//   RANK, WORLD_SIZE  torchrun and Kubeflow's PyTorchJob (with LOCAL_RANK,
//                     MASTER_ADDR, MASTER_PORT)
//   SLURM_PROCID      a task of `srun` (SLURM_STEP_ID set), with SLURM_NTASKS,
//                     SLURM_LOCALID and the step's (or job's) node list
//   OMPI_COMM_WORLD_RANK   Open MPI's mpirun (with _SIZE, _LOCAL_RANK, _LOCAL_SIZE)
//   PMI_RANK, PMI_SIZE     MPICH's and Intel MPI's (Hydra) mpiexec
//
// The first two name every task's address. The others give only a rank and
// a size: the ranks then meet at a coordinator (DFLOW_COORDINATOR=host:port,
// else MASTER_ADDR:MASTER_PORT, else the first host of the Slurm node list,
// else, when every rank is on this machine, 127.0.0.1 at a port derived from
// the launcher's job id). Each rank picks a free port, rank 0 listens at the
// coordinator, gathers every rank's address and hands the whole cluster back.
// Ranks 0..DFLOW_NUM_PS-1 become parameter servers ("ps"), the others
// workers (rank DFLOW_NUM_PS is the chief, worker 0).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dist/cluster.h"

namespace dflow::dist {

// Environment variables by name: a snapshot (tests pass their own).
using Environment = std::map<std::string, std::string>;
// The variables this file reads, from the process's environment.
Environment ProcessEnvironment();

// What a launcher said about this process.
struct LauncherCluster {
  std::string source;  // "DFLOW_CLUSTER", "TF_CONFIG", "RANK/WORLD_SIZE (torchrun)", ...
  // DFLOW_CLUSTER and TF_CONFIG: the whole cluster.
  std::optional<ClusterSpec> spec;
  // The others: this process's rank of `size`, and where the ranks meet.
  int rank = 0, size = 0;
  std::string coordinator;  // "host:port"
  std::string coordinator_source;  // which variable named it
  int num_ps = 0;           // DFLOW_NUM_PS
};

// Which launcher set up this process, or nullopt when none did. Throws
// kInvalidArgument naming the variables when they are partial (RANK without
// WORLD_SIZE), malformed (a rank that is not a number) or conflicting (a
// rank outside the size, more ps than ranks).
std::optional<LauncherCluster> DetectLauncher(const Environment& env);

// TF_CONFIG's document as a dflow cluster (see above); errors name TF_CONFIG
// and the field.
ClusterSpec ClusterFromTfConfig(std::string_view text);

// Slurm's hostlist syntax: "n[01-04,07],gpu5" -> n01 n02 n03 n04 n07 gpu5
// (zero padding kept; several bracket groups in one name multiply).
std::vector<std::string> ExpandHostlist(std::string_view hostlist);

// The cluster of `size` ranks whose addresses are `addresses` (by rank):
// ranks below num_ps are "ps" tasks, the rest "worker"s; self is `rank`.
ClusterSpec ClusterOfRanks(const std::vector<std::string>& addresses, int rank, int num_ps);

// The ranks meet at the coordinator (see above) and each returns the whole
// cluster with itself as the task. Rank 0 waits up to `timeout` for the
// others and names the ranks that never came; the others wait as long for
// its answer.
ClusterSpec MeetAtCoordinator(const LauncherCluster& launcher,
                              std::chrono::milliseconds timeout = std::chrono::seconds(120));

// The cluster the launcher describes (meeting the other ranks when it gives
// only ranks), or nullopt without one. Logs once per process, on stderr,
// which variables it came from and which task this process is.
std::optional<ClusterSpec> ResolveCluster(const Environment& env);

}  // namespace dflow::dist
