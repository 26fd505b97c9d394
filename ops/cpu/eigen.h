// Eigen/Core for the CPU kernels, included with gcc 12's unused and
// uninitialised warnings silenced: Eigen's AVX headers trip them (false
// positives in Eigen and in the AVX-512 intrinsics it wraps).
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
