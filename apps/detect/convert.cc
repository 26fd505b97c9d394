// dflow-detect convert: a detection dataset from one format into another
// (COCO, Pascal VOC, YOLO), images copied beside the new annotations.
#include <iostream>

#include "apps/detect/commands.h"
#include "models/data/detection_formats.h"

namespace dflow::detect_app {

int Convert(const ConvertSettings& s) {
  using namespace dflow::models;
  DetectionFormat to = ParseDetectionFormat(s.format);
  DetectionFormat from = DetectDetectionFormat(s.data);
  VocReadOptions voc{s.split, s.voc_classes ? kVocClasses : std::vector<std::string>{}};
  DetectionDataset dataset = LoadDetectionDataset(s.data, voc);
  WriteDetectionDataset(s.out, dataset, to, s.data);
  std::cout << "converted " << DetectionFormatName(from) << " '" << s.data << "' to "
            << DetectionFormatName(to) << " '" << s.out << "': " << dataset.images.size()
            << " images, " << dataset.annotations.size() << " objects, "
            << dataset.categories.size() << " classes" << std::endl;
  return 0;
}

}  // namespace dflow::detect_app
