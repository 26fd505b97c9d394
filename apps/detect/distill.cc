// Knowledge distillation's teacher; see distill.h.
#include "apps/detect/distill.h"

#include <iostream>

#include "apps/common/run_files.h"
#include "models/layers.h"

namespace dflow::detect_app {

TrainSettings DistillationTeacherSettings(const TrainSettings& s) {
  const std::string run = apps::RunDirOf(s.distill_from);
  if (run.empty())
    Fail(Code::kNotFound, "train --teacher: ", s.distill_from, " is not inside a dflow-detect run directory ",
         "(RUN/checkpoints/ next to RUN/config.json)");
  DFLOW_REQUIRE(s.imitation_maps <= HeadMapCount(s.model), "train --imitation-maps ", s.imitation_maps,
                ": the heads of ", s.model, " read ", HeadMapCount(s.model), " maps");
  TrainSettings teacher = ReadConfig(run);
  DFLOW_REQUIRE(teacher.class_names == s.class_names, "train --teacher: the teacher (", ConfigPath(run),
                ") knows other classes than the student's data; distillation needs the same classes in the same order");
  const Tensor teacher_boxes = DefaultBoxes(teacher), student_boxes = DefaultBoxes(s);
  const bool same_boxes = teacher_boxes.shape() == student_boxes.shape() &&
                          std::equal(teacher_boxes.data<float>(), teacher_boxes.data<float>() + teacher_boxes.NumElements(),
                                     student_boxes.data<float>());
  DFLOW_REQUIRE(same_boxes, "train --teacher: the teacher (", teacher.model, " ", teacher.size, "x", teacher.size,
                ") and the student (", s.model, " ", s.size, "x", s.size,
                ") have different default boxes; distillation pairs their outputs box by box");
  return teacher;
}

void InitDistillationTeacher(Session& session, const DetectorGraph& g, const Saver& saver, const TrainSettings& s) {
  const std::string prefix = std::string(kTeacherScope) + "/";
  RestoreOptions restore;
  for (const std::string& name : VariableNames(g.scope.graph()))
    if (name.starts_with(prefix)) {
      restore.only.push_back(name);
      restore.name_map[name] = name.substr(prefix.size());
    }
  try {
    saver.Restore(session, s.distill_from, restore);
  } catch (const Error& e) {
    if (e.code() == Code::kDataLoss) throw;
    Fail(Code::kInvalidArgument, "train --teacher: ", s.distill_from, " does not hold the network its run's ",
         "config.json describes: ", e.message());
  }
  std::cout << "teacher " << s.distill_from << " (" << restore.only.size() << " variables), distilling "
            << (s.distillation == "both" ? "outputs and features" : s.distillation == "output" ? "outputs" : "features")
            << "\n";
}

}  // namespace dflow::detect_app
