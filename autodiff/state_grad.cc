// Ops that no gradient flows through: constants, placeholders, variables
// and their updates (Assign, the optimizers' apply ops), random numbers, the
// executor's own _Arg/_Retval, the partitioner's _Send/_Recv, and the
// parameter server's accumulators and logs.
// A variable's *value* is differentiable (AddGradients with the variable's
// output as an x); the ops that create or change state are not.
#include "autodiff/gradients.h"

namespace dflow::autodiff {
namespace {

REGISTER_NO_GRADIENT("Const");
REGISTER_NO_GRADIENT("Placeholder");
REGISTER_NO_GRADIENT("VariableV2");
REGISTER_NO_GRADIENT("Assign");
REGISTER_NO_GRADIENT("AssignAdd");
REGISTER_NO_GRADIENT("AssignSub");
REGISTER_NO_GRADIENT("NoOp");
REGISTER_NO_GRADIENT("RandomUniform");
REGISTER_NO_GRADIENT("RandomStandardNormal");
REGISTER_NO_GRADIENT("TruncatedNormal");
// Optimizer updates (ops/training.cc).
REGISTER_NO_GRADIENT("ApplyGradientDescent");
REGISTER_NO_GRADIENT("ApplyMomentum");
REGISTER_NO_GRADIENT("ApplyAdam");
REGISTER_NO_GRADIENT("ApplyAdamW");
REGISTER_NO_GRADIENT("ApplyRMSProp");
REGISTER_NO_GRADIENT("ApplyCenteredRMSProp");
REGISTER_NO_GRADIENT("_Arg");
REGISTER_NO_GRADIENT("_Retval");
// Partition adds these after gradients exist; a gradient never crosses them.
REGISTER_NO_GRADIENT("_Send");
REGISTER_NO_GRADIENT("_Recv");
REGISTER_NO_GRADIENT("HostConst");
REGISTER_NO_GRADIENT("_HostToDevice");
REGISTER_NO_GRADIENT("_DeviceToHost");
// The parameter server's state (ops/parameter_server.cc): gradients go into it, none through it.
REGISTER_NO_GRADIENT("IsVariableInitialized");
REGISTER_NO_GRADIENT("GradientAccumulatorPush");
REGISTER_NO_GRADIENT("GradientAccumulatorTakeMean");
REGISTER_NO_GRADIENT("GradientAccumulatorFinishStep");
REGISTER_NO_GRADIENT("GradientAccumulatorWaitForStep");
REGISTER_NO_GRADIENT("GradientAccumulatorState");
REGISTER_NO_GRADIENT("GradientAccumulatorAbort");
REGISTER_NO_GRADIENT("GradientAccumulatorSetGlobalStep");
REGISTER_NO_GRADIENT("StalenessLogGlobalStep");
REGISTER_NO_GRADIENT("StalenessLogRecord");
// In-graph data-parallel training (ops/collective.cc): they
// average gradients and copy variables, after backprop.
REGISTER_NO_GRADIENT("DataParallelAllReduce");
REGISTER_NO_GRADIENT("DataParallelBroadcast");
// Quantization (ops/quant.cc) is for inference graphs, as in TensorFlow.
REGISTER_NO_GRADIENT("QuantizeV2");
REGISTER_NO_GRADIENT("Dequantize");
REGISTER_NO_GRADIENT("QuantizedMatMulWithBiasAndRequantize");
REGISTER_NO_GRADIENT("QuantizedAddAndRequantize");
REGISTER_NO_GRADIENT("QuantizedRelu");
REGISTER_NO_GRADIENT("QuantizedAddAndReluAndRequantize");
REGISTER_NO_GRADIENT("QuantizedConv2DWithBiasAndRequantize");
REGISTER_NO_GRADIENT("QuantizedConv2DWithBiasAndReluAndRequantize");
REGISTER_NO_GRADIENT("QuantizedDepthwiseConv2DWithBiasAndRequantize");
REGISTER_NO_GRADIENT("QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize");
REGISTER_NO_GRADIENT("QuantizedConv2DWithBiasAndDequantize");
REGISTER_NO_GRADIENT("QuantizedConv2DWithBiasAndReluAndDequantize");
REGISTER_NO_GRADIENT("QuantizedDepthwiseConv2DWithBiasAndDequantize");
REGISTER_NO_GRADIENT("QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize");

}  // namespace
}  // namespace dflow::autodiff
