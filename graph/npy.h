// Tensors on disk as numpy .npy files (format versions 1.0, 2.0 and 3.0), so
// feeds and fetches of `dflow run` move to and from numpy unchanged. Only
// little-endian, C-ordered arrays of dflow's dtypes are supported.
#pragma once

#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace dflow {

// Decodes the bytes of a .npy file. `source` names the file in errors. Bad or
// truncated bytes throw kDataLoss; a valid file dflow cannot represent
// (big-endian, Fortran order, an unsupported dtype) throws kInvalidArgument.
Tensor ParseNpy(std::string_view bytes, std::string_view source = "<memory>");
// Encodes a tensor as a .npy file: version 1.0, or 2.0 when the header is too
// long for 1.0. numpy's np.load reads the result.
std::string SerializeNpy(const Tensor& tensor);

// ParseNpy of a file's contents; a missing or unreadable file throws kNotFound.
Tensor ReadNpy(const std::string& path);
// Writes SerializeNpy(tensor) to `path`, replacing it; throws on I/O failure.
void WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace dflow
