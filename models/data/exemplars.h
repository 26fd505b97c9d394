// The exemplar memory of incremental learning (Rebuffi et al. 2017, iCaRL):
// a few images of each class kept from every
// session's data, so that later sessions still see the old classes while
// the rest of the data is discarded. Helpers to choose them, to join
// datasets from several folders into one training set, and to store a
// memory as an ordinary COCO folder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::models {

// A dataset and the folder its file names are relative to.
struct DatasetPart {
  DetectionDataset data;
  std::string root;
};

// The parts as one dataset: file names made absolute (so that one pipeline
// reads them all with an empty root), image and annotation ids renumbered
// from 1, categories matched by name and listed in `class_names` order
// (label k + 1 is class_names[k]) with ids `category_ids`. Throws
// kInvalidArgument naming the part's root and the category when a part has
// a class outside `class_names`.
DetectionDataset JoinDatasets(const std::vector<DatasetPart>& parts,
                              const std::vector<std::string>& class_names,
                              const std::vector<int64_t>& category_ids);

// Random exemplar selection: for each category,
// ceil(share * the images that hold one of its objects) of those images,
// drawn without replacement with `seed`; an image chosen for one class
// counts for its others too. Returns the chosen images' ids, ascending.
// share 0 chooses none; share must be within [0, 1].
std::vector<int64_t> ChooseRandomExemplars(const DetectionDataset& data, double share, uint64_t seed);

// Herding (iCaRL, Algorithm 4) on one feature vector per image (`features`
// [images][dims], in `data.images` order): for each category, images are
// added one at a time so that the mean of the chosen features stays closest
// to the mean of all of the category's images. Same counts as above.
std::vector<int64_t> ChooseHerdingExemplars(const DetectionDataset& data,
                                            const std::vector<std::vector<float>>& features,
                                            double share);

// The images with these ids and their objects (categories kept).
DetectionDataset SelectImages(const DetectionDataset& data, const std::vector<int64_t>& image_ids);

// Writes `data` (absolute file names, as JoinDatasets makes them) as a COCO
// folder: DIR/images/NNNNNN.EXT copies and DIR/annotations.json last, into a
// fresh DIR.tmp renamed over DIR, so that a memory is never half written.
void WriteDatasetFolder(const std::string& dir, const DetectionDataset& data);

}  // namespace dflow::models
