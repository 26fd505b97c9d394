// IDX files, the format of MNIST and its kin: two zero bytes, a type byte,
// the number of dimensions, each dimension as a big-endian uint32, then the
// values row-major. Only unsigned bytes (type 0x08) are read, which is what
// image and label files hold. Used for the sprites of synthetic scenes.
#pragma once

#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace dflow::models {

// uint8 tensor with the file's dimensions. Throws kDataLoss naming `source`
// for a bad magic, another value type, a truncated header or body, or bytes
// left over after the values.
Tensor ParseIdx(std::string_view bytes, const std::string& source);
// Reads the file (kNotFound when it cannot be read), then as above.
Tensor ReadIdx(const std::string& path);

}  // namespace dflow::models
