// All op builders: include this to build graphs with the C++ API.
#pragma once

#include "graph/scope.h"
#include "ops/random.h"
#include "ops/state.h"
