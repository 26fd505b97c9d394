// Data movement shared by the array kernels. Elements are moved by size (1, 2,
// 4 or 8 bytes), never by type, so one routine serves every dtype: float16,
// bool and int8 alike.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "graph/status.h"
#include "graph/thread_pool.h"

namespace dflow::cpu {

// Calls fn.template operator()<U>() with the unsigned integer type U that has
// `bytes` bytes.
template <typename Fn>
void DispatchByElementSize(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: fn.template operator()<uint8_t>(); break;
    case 2: fn.template operator()<uint16_t>(); break;
    case 4: fn.template operator()<uint32_t>(); break;
    case 8: fn.template operator()<uint64_t>(); break;
    default: Fail(Code::kInternal, "no element type of ", bytes, " bytes");
  }
}

// Sets n elements of `elem` bytes at `out` to a copy of the element at `value`.
void FillElements(void* out, const void* value, size_t elem, int64_t n);

// Drops dims of size 1 and merges neighbouring dims that are contiguous in
// the source (steps[i] == steps[i+1] * dims[i+1]), for StridedGather.
void CollapseStridedDims(std::vector<int64_t>& dims, std::vector<int64_t>& steps);

// Fills the contiguous `out`, of dims out_dims, with
//   out[i_0, ..., i_k] = in[base + sum_d i_d * steps[d]]
// (steps in elements, possibly negative or zero). Slice, StridedSlice and
// Transpose are all this.
void StridedGather(const void* in, int64_t base, std::vector<int64_t> steps, void* out,
                   std::vector<int64_t> out_dims, size_t elem, ThreadPool& pool);
// The inverse: out[base + sum_d i_d * steps[d]] = in[i_0, ..., i_k] for the
// contiguous `in` of dims in_dims; other elements of `out` are left as they
// are. The positions written must be distinct (no zero step). StridedSliceGrad.
void StridedScatter(const void* in, std::vector<int64_t> in_dims, void* out, int64_t base,
                    std::vector<int64_t> steps, size_t elem, ThreadPool& pool);

// Fills `out` (out_dims) with out[i] = in[i mod in_dims] in every dim; ranks
// are equal. Tile is this, and so is BroadcastTo (each in dim is 1 or equal).
void RepeatCopy(const void* in, std::vector<int64_t> in_dims, void* out,
                std::vector<int64_t> out_dims, size_t elem, ThreadPool& pool);

// Calls fn(row, offset) for rows [begin, end) of an iteration over all but the
// last of `dims`, where offset = base + sum_d index_d * steps[d]. An odometer
// keeps offsets incremental: no division per row.
template <typename Fn>
void ForEachRow(const std::vector<int64_t>& dims, const std::vector<int64_t>& steps, int64_t base,
                int64_t begin, int64_t end, Fn&& fn) {
  int outer = static_cast<int>(dims.size()) - 1;
  std::vector<int64_t> index(outer > 0 ? outer : 0);
  int64_t offset = base, rest = begin;
  for (int d = outer - 1; d >= 0; --d) {
    index[d] = rest % dims[d];
    rest /= dims[d];
    offset += index[d] * steps[d];
  }
  for (int64_t row = begin; row < end; ++row) {
    fn(row, offset);
    for (int d = outer - 1; d >= 0; --d) {
      offset += steps[d];
      if (++index[d] < dims[d]) break;
      offset -= steps[d] * dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace dflow::cpu
