// All op builders: include this to build graphs with the C++ API.
#pragma once

#include "graph/scope.h"
#include "ops/batch_norm.h"
#include "ops/image.h"
#include "ops/linalg.h"
#include "ops/math.h"
#include "ops/nn.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/state.h"
#include "ops/training.h"
#include "ops/array.h"
#include "ops/conv.h"
#include "ops/detection.h"
#include "ops/quant.h"
