#include "ops/cpu/array_copy.h"

#include <algorithm>

namespace dflow::cpu {

void FillElements(void* out, const void* value, size_t elem, int64_t n) {
  DispatchByElementSize(elem, [&]<typename U>() {
    U v;
    std::memcpy(&v, value, sizeof(U));
    U* o = static_cast<U*>(out);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  });
}

void CollapseStridedDims(std::vector<int64_t>& dims, std::vector<int64_t>& steps) {
  std::vector<int64_t> new_dims, new_steps;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!new_dims.empty() && new_steps.back() == steps[i] * dims[i]) {
      // index j = a * dims[i] + b reads a * steps[i] * dims[i] + b * steps[i] = j * steps[i].
      new_dims.back() *= dims[i];
      new_steps.back() = steps[i];
    } else {
      new_dims.push_back(dims[i]);
      new_steps.push_back(steps[i]);
    }
  }
  dims = std::move(new_dims);
  steps = std::move(new_steps);
}

namespace {

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

namespace {

// Moves elements between the contiguous `flat` (dims) and the strided view
// strided[base + sum_d i_d * steps[d]]: gathers into flat, or scatters from it.
void StridedMove(const void* strided, int64_t base, std::vector<int64_t> steps, void* flat,
                 std::vector<int64_t> dims, size_t elem, ThreadPool& pool, bool scatter) {
  int64_t total = Product(dims);
  if (total == 0) return;
  CollapseStridedDims(dims, steps);
  char* view = const_cast<char*>(static_cast<const char*>(strided));
  if (dims.empty()) {  // a single element
    scatter ? std::memcpy(view + base * elem, flat, elem) : std::memcpy(flat, view + base * elem, elem);
    return;
  }
  int64_t len = dims.back(), step = steps.back();
  DispatchByElementSize(elem, [&]<typename U>() {
    U* src = reinterpret_cast<U*>(view);
    U* dst = static_cast<U*>(flat);
    pool.ParallelFor(total / len, len, [&](int64_t begin, int64_t end) {
      ForEachRow(dims, steps, base, begin, end, [&](int64_t row, int64_t offset) {
        U* o = dst + row * len;
        U* s = src + offset;
        if (step == 1) {
          scatter ? std::memcpy(s, o, len * sizeof(U)) : std::memcpy(o, s, len * sizeof(U));
        } else if (scatter) {
          for (int64_t k = 0; k < len; ++k) s[k * step] = o[k];
        } else {
          for (int64_t k = 0; k < len; ++k) o[k] = s[k * step];
        }
      });
    });
  });
}

}  // namespace

void StridedGather(const void* in, int64_t base, std::vector<int64_t> steps, void* out,
                   std::vector<int64_t> out_dims, size_t elem, ThreadPool& pool) {
  StridedMove(in, base, std::move(steps), out, std::move(out_dims), elem, pool, false);
}

void StridedScatter(const void* in, std::vector<int64_t> in_dims, void* out, int64_t base,
                    std::vector<int64_t> steps, size_t elem, ThreadPool& pool) {
  StridedMove(out, base, std::move(steps), const_cast<void*>(in), std::move(in_dims), elem, pool,
              true);
}

namespace {

// Drops dims of output size 1 and merges neighbours that both copy (in == out)
// or both broadcast a single element (in == 1).
void CollapseRepeatDims(std::vector<int64_t>& in_dims, std::vector<int64_t>& out_dims) {
  std::vector<int64_t> new_in, new_out;
  for (size_t i = 0; i < in_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    bool copies = in_dims[i] == out_dims[i], broadcasts = in_dims[i] == 1;
    if (!new_in.empty() && ((copies && new_in.back() == new_out.back()) ||
                            (broadcasts && new_in.back() == 1))) {
      new_in.back() *= in_dims[i];
      new_out.back() *= out_dims[i];
    } else {
      new_in.push_back(in_dims[i]);
      new_out.push_back(out_dims[i]);
    }
  }
  in_dims = std::move(new_in);
  out_dims = std::move(new_out);
}

// Writes one output row of out_len elements from a source row of in_len.
void RepeatRow(const char* src, int64_t in_len, char* dst, int64_t out_len, size_t elem) {
  if (in_len == out_len) {
    std::memcpy(dst, src, out_len * elem);
  } else if (in_len == 1) {
    FillElements(dst, src, elem, out_len);
  } else {
    for (int64_t k = 0; k < out_len; k += in_len)
      std::memcpy(dst + k * elem, src, std::min(in_len, out_len - k) * elem);
  }
}

}  // namespace

void RepeatCopy(const void* in, std::vector<int64_t> in_dims, void* out,
                std::vector<int64_t> out_dims, size_t elem, ThreadPool& pool) {
  int64_t total = Product(out_dims);
  if (total == 0) return;
  CollapseRepeatDims(in_dims, out_dims);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (out_dims.empty()) {
    std::memcpy(dst, src, elem);
    return;
  }
  int outer = static_cast<int>(out_dims.size()) - 1;
  std::vector<int64_t> in_strides(outer + 1, 1);
  for (int d = outer - 1; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in_dims[d + 1];
  int64_t in_len = in_dims.back(), out_len = out_dims.back();
  pool.ParallelFor(total / out_len, out_len, [&](int64_t begin, int64_t end) {
    // Odometer over the outer output dims; the source index wraps at in_dims.
    std::vector<int64_t> index(outer), wrapped(outer);
    int64_t rest = begin, offset = 0;
    for (int d = outer - 1; d >= 0; --d) {
      index[d] = rest % out_dims[d];
      rest /= out_dims[d];
      wrapped[d] = index[d] % in_dims[d];
      offset += wrapped[d] * in_strides[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      RepeatRow(src + offset * elem, in_len, dst + row * out_len * elem, out_len, elem);
      for (int d = outer - 1; d >= 0; --d) {
        ++index[d];
        if (++wrapped[d] == in_dims[d]) {
          wrapped[d] = 0;
          offset -= (in_dims[d] - 1) * in_strides[d];
        } else {
          offset += in_strides[d];
        }
        if (index[d] < out_dims[d]) break;
        index[d] = 0;
        offset -= wrapped[d] * in_strides[d];
        wrapped[d] = 0;
      }
    }
  });
}

}  // namespace dflow::cpu
