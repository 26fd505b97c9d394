// Everything a program that builds, trains and saves models includes, in
// one header (as <torch/torch.h> is for libtorch): graphs and op builders,
// sessions, gradients, optimizers and learning-rate schedules, the layers,
// checkpoints, the generated datasets, and data-parallel training.
// Installed as <dflow/dflow.h>. Finer-grained headers stay available.
#pragma once

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "dist/training/distributed_optimizer.h"
#include "dist/training/training_session.h"
#include "graph/npy.h"
#include "graph/session.h"
#include "models/checkpoint.h"
#include "models/data/spirals.h"
#include "models/layers.h"
#include "models/mlp.h"
#include "ops/ops.h"
