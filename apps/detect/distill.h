// Knowledge distillation for detectors in dflow-detect (the model
// compression box of Murabito 2022, "Deep Learning at the Edge", section
// 2.4): `train --teacher CKPT --distill output|feature|both` trains a
// smaller student with a trained teacher of the same classes inside its
// graph (frozen, in inference mode). The student mimics the teacher's
// outputs (its class probabilities as soft targets, KL divergence, and its
// boxes, smooth-L1, both weighted by the teacher's confidence that an object
// is there: models/detection/incremental.h) and/or its feature maps near the objects
// (fine-grained feature imitation, Wang et al. 2019:
// models/detection/feature_imitation.h).
#pragma once

#include "apps/detect/detector.h"
#include "models/checkpoint.h"

namespace dflow::detect_app {

// The teacher's run settings (its config.json), checked against the
// student's: the same classes in the same order and the same default boxes
// (model family, input size and scales); and the student's imitation_maps
// against the maps its heads read. kNotFound for a teacher outside a run
// directory, kInvalidArgument naming what differs or is out of range.
TrainSettings DistillationTeacherSettings(const TrainSettings& student);

// The first step of a distilled run: the teacher's variables (under
// kTeacherScope) from its checkpoint. `saver` covers every variable.
void InitDistillationTeacher(Session& session, const DetectorGraph& graph, const Saver& saver,
                             const TrainSettings& settings);

}  // namespace dflow::detect_app
