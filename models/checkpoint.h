// Checkpoints in the style of TensorFlow 1's tf.train.Saver: save the graph's
// variables to a safetensors file and restore them, both through
// Session::Run (one fetch to save, one step of Assigns to restore), so the
// same code works wherever the session keeps its variables.
//
//   Saver saver(scope);                              // every variable in the graph
//   std::string path = saver.Save(session, "ckpt/model", step);  // ckpt/model-<step>.safetensors
//   saver.Restore(session, *LatestCheckpoint("ckpt"));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/scope.h"
#include "graph/session.h"

namespace dflow {

class SafetensorsReader;

struct SaverOptions {
  // Checkpoints of one prefix kept in its directory; older ones are deleted
  // after each save. 0 keeps them all.
  int max_to_keep = 5;
};

struct RestoreOptions {
  // Graph variable name -> tensor name in the file, for variables saved
  // under another name (transfer learning); unlisted variables use their own.
  std::map<std::string, std::string> name_map;
  // When non-empty, only these variables are restored; the others keep their
  // values. Tensors in the file that no restored variable asks for are ignored.
  std::vector<std::string> only;
};

class Saver {
 public:
  // Saves `variables` (outputs of VariableV2 nodes); none given means every
  // VariableV2 in the scope's graph. Adds the restore ops (a Placeholder and
  // an Assign per variable) to the graph under a "save/" name scope.
  Saver(const Scope& scope, const std::vector<Output>& variables, SaverOptions options = {});
  explicit Saver(const Scope& scope, SaverOptions options = {});

  // Fetches the variables in one Run and writes them durably to
  // "<prefix>-<global_step>.safetensors" (or "<prefix>.safetensors"), where
  // a directory (existing, or ending in '/') means the prefix "<dir>/model".
  // Records the file in the directory's index and deletes the oldest files
  // of the prefix beyond max_to_keep. Returns the file's path.
  std::string Save(Session& session, const std::string& dir_or_prefix,
                   std::optional<int64_t> global_step = std::nullopt) const;

  // Checks the whole file (header, names, dtypes, shapes, checksums) before
  // it assigns anything, so a failed restore leaves every variable as it
  // was; then assigns all restored variables in one Run. Errors: kNotFound
  // for a missing file or variable, kInvalidArgument for a dtype or shape
  // mismatch, kDataLoss for a truncated or corrupt file.
  void Restore(Session& session, const std::string& path, const RestoreOptions& options = {}) const;

  // Every variable's value, fetched in one Run, in variable_names' order.
  std::vector<Tensor> Values(Session& session) const;
  // Assigns one value per variable (variable_names' order) in one Run, as
  // Restore does; a value of another dtype or shape is kInvalidArgument
  // naming the variable, before anything is assigned. With Values, this
  // copies every variable between sessions, wherever each keeps them.
  void Assign(Session& session, const std::vector<Tensor>& values) const;
  // The saved variables' names, in the order they are written.
  std::vector<std::string> variable_names() const;

 private:
  struct SavedVariable {
    std::string name;
    Output variable;
    Output value;  // the Placeholder restore feeds
    Node* assign;  // the Assign restore runs
  };
  struct PlannedAssign;

  void AddVariable(const Scope& save_scope, const Output& variable);
  std::vector<PlannedAssign> PlanRestore(const SafetensorsReader& reader,
                                         const RestoreOptions& options) const;

  SaverOptions options_;
  std::vector<SavedVariable> variables_;
};

// The index of a checkpoint directory, "<dir>/checkpoint.json" (TensorFlow's
// "checkpoint" file, as JSON): file names inside the directory.
inline constexpr std::string_view kCheckpointIndexName = "checkpoint.json";
struct CheckpointIndex {
  std::string latest;            // empty when there is none
  std::vector<std::string> all;  // oldest first; includes latest
};

// The directory's index; an empty one when the directory has no index file.
// A malformed index throws kDataLoss.
CheckpointIndex ReadCheckpointIndex(const std::string& dir);
// Writes the index durably (temp file, fsync, rename).
void WriteCheckpointIndex(const std::string& dir, const CheckpointIndex& index);
// Makes `file` (a name inside `dir`) the latest checkpoint and, when
// max_to_keep > 0, drops the oldest files of `prefix` ("<prefix>.safetensors",
// "<prefix>-<step>.safetensors") beyond max_to_keep from the index, then from
// the disk. The index is written before anything is deleted, so it never
// names a missing file.
void RecordCheckpoint(const std::string& dir, const std::string& file, std::string_view prefix,
                      int max_to_keep);
// "<dir>/<latest>" from the index, or nullopt when nothing was saved there.
std::optional<std::string> LatestCheckpoint(const std::string& dir);

}  // namespace dflow
