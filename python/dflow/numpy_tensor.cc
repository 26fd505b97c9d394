// numpy arrays <-> Tensors for the dflow._dflow extension; see bindings.h.
#include <cstdint>
#include <vector>

#include "python/dflow/bindings.h"

namespace dflow::python {

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
    case DType::kFloat16: return py::dtype("float16");
    case DType::kInt8: return py::dtype::of<int8_t>();
    case DType::kUInt8: return py::dtype::of<uint8_t>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kInvalid: break;
  }
  Fail(Code::kInvalidArgument, "dtype ", DTypeName(dtype), " has no numpy equivalent");
  return py::dtype();
}

DType FromNumpyDType(const py::dtype& dtype) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8, DType::kUInt8,
                  DType::kInt32, DType::kInt64, DType::kBool})
    if (dtype.is(NumpyDType(d)) || dtype.equal(NumpyDType(d))) return d;
  Fail(Code::kInvalidArgument, "numpy dtype ", py::cast<std::string>(dtype.attr("name")),
       " has no dflow equivalent (float16/32/64, int8, uint8, int32, int64, bool)");
  return DType::kInvalid;
}

py::array ToNumpy(const Tensor& tensor) {
  DFLOW_REQUIRE(tensor.valid(), "an empty tensor handle has no value");
  DFLOW_REQUIRE(!tensor.allocator() || tensor.allocator()->host_accessible(),
                "a tensor in device memory cannot become a numpy array; fetch it instead");
  std::vector<py::ssize_t> shape(tensor.shape().dims().begin(), tensor.shape().dims().end());
  auto* kept = new Tensor(tensor);
  py::capsule owner(kept, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(NumpyDType(tensor.dtype()), shape, {}, tensor.raw_data(), owner);
}

// The release may run on an executor thread, hence the GIL taken there.
Tensor FromNumpy(py::array array) {
  DType dtype = FromNumpyDType(array.dtype());
  bool usable = (array.flags() & py::array::c_style) &&
                reinterpret_cast<uintptr_t>(array.data()) % Tensor::kMinAdoptedAlignment == 0;
  if (!usable) array = py::array::ensure(py::module_::import("numpy").attr("ascontiguousarray")(array));
  Shape shape(std::vector<int64_t>(array.shape(), array.shape() + array.ndim()));
  if (array.size() == 0) return Tensor(dtype, shape);
  PyObject* object = array.ptr();
  Py_INCREF(object);
  return Tensor::Adopt(dtype, shape, const_cast<void*>(array.data()), [object] {
    py::gil_scoped_acquire gil;
    Py_DECREF(object);
  });
}

Tensor CopyOf(const Tensor& tensor) { return tensor.Clone(CpuAllocator()); }

}  // namespace dflow::python
