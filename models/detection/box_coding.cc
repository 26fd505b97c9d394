// Box encode/decode on arrays and as graph functions; see box_coding.h.
#include "models/detection/box_coding.h"

#include <algorithm>

#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

struct CenterSize {
  float cx, cy, w, h;
};

CenterSize ToCenter(const float* b) {
  return {(b[1] + b[3]) / 2, (b[0] + b[2]) / 2, b[3] - b[1], b[2] - b[0]};
}

// The same split into centre and size with ops: four [..., 1] tensors.
struct CenterSizeOps {
  Output cx, cy, w, h;
};

CenterSizeOps ToCenter(const Scope& s, const Input& boxes) {
  std::vector<Output> c = ops::Split(s, -1, boxes, 4);  // y1, x1, y2, x2
  return {ops::Mul(s, ops::Add(s, c[1], c[3]), 0.5f), ops::Mul(s, ops::Add(s, c[0], c[2]), 0.5f),
          ops::Sub(s, c[3], c[1]), ops::Sub(s, c[2], c[0])};
}

}  // namespace

void EncodeBoxes(const float* boxes, const float* anchors, int64_t count,
                 const BoxVariances& v, float* deltas) {
  for (int64_t i = 0; i < count; ++i) {
    CenterSize b = ToCenter(boxes + 4 * i);
    CenterSize a = ToCenter(anchors + 4 * i);
    float* d = deltas + 4 * i;
    d[0] = (b.cx - a.cx) / a.w / v[0];
    d[1] = (b.cy - a.cy) / a.h / v[1];
    d[2] = std::log(b.w / a.w) / v[2];
    d[3] = std::log(b.h / a.h) / v[3];
  }
}

void DecodeBoxes(const float* deltas, const float* anchors, int64_t count,
                 const BoxVariances& v, float* boxes) {
  for (int64_t i = 0; i < count; ++i) {
    CenterSize a = ToCenter(anchors + 4 * i);
    const float* d = deltas + 4 * i;
    float cx = d[0] * v[0] * a.w + a.cx;
    float cy = d[1] * v[1] * a.h + a.cy;
    float w = std::exp(std::min(d[2] * v[2], kMaxLogScale)) * a.w;
    float h = std::exp(std::min(d[3] * v[3], kMaxLogScale)) * a.h;
    float* b = boxes + 4 * i;
    b[0] = cy - h / 2;
    b[1] = cx - w / 2;
    b[2] = cy + h / 2;
    b[3] = cx + w / 2;
  }
}

Output EncodeBoxes(const Scope& scope, const Input& boxes, const Input& anchors,
                   const BoxVariances& v) {
  Scope s = scope.NewSubScope("EncodeBoxes");
  CenterSizeOps b = ToCenter(s, boxes);
  CenterSizeOps a = ToCenter(s, anchors);
  Output dx = ops::Div(s, ops::Sub(s, b.cx, a.cx), ops::Mul(s, a.w, v[0]));
  Output dy = ops::Div(s, ops::Sub(s, b.cy, a.cy), ops::Mul(s, a.h, v[1]));
  Output dw = ops::Mul(s, ops::Log(s, ops::Div(s, b.w, a.w)), 1.0f / v[2]);
  Output dh = ops::Mul(s, ops::Log(s, ops::Div(s, b.h, a.h)), 1.0f / v[3]);
  return ops::Concat(s, {dx, dy, dw, dh}, -1);
}

Output DecodeBoxes(const Scope& scope, const Input& deltas, const Input& anchors,
                   const BoxVariances& v) {
  Scope s = scope.NewSubScope("DecodeBoxes");
  std::vector<Output> d = ops::Split(s, -1, deltas, 4);  // dx, dy, dw, dh
  CenterSizeOps a = ToCenter(s, anchors);
  Output cx = ops::Add(s, ops::Mul(s, ops::Mul(s, d[0], v[0]), a.w), a.cx);
  Output cy = ops::Add(s, ops::Mul(s, ops::Mul(s, d[1], v[1]), a.h), a.cy);
  Output w = ops::Mul(s, ops::Exp(s, ops::Minimum(s, ops::Mul(s, d[2], v[2]), kMaxLogScale)), a.w);
  Output h = ops::Mul(s, ops::Exp(s, ops::Minimum(s, ops::Mul(s, d[3], v[3]), kMaxLogScale)), a.h);
  Output half_w = ops::Mul(s, w, 0.5f);
  Output half_h = ops::Mul(s, h, 0.5f);
  return ops::Concat(s, {ops::Sub(s, cy, half_h), ops::Sub(s, cx, half_w), ops::Add(s, cy, half_h),
                         ops::Add(s, cx, half_w)},
                     -1);
}

}  // namespace dflow::models::detection
