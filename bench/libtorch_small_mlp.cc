// apps/examples/small_mlp.cc written with libtorch (PyTorch's C++ API), for
// bench/mlp_lines to count beside dflow's C++ and Python versions: the same
// 2 -> 64 -> 64 -> 3 MLP, full-batch Adam at 0.01 for 1000 steps, held-out
// accuracy. libtorch has no spirals generator, so the program makes its own
// (marked below; bench/mlp_lines counts the lines with and without it).
#include <torch/torch.h>

#include <cmath>
#include <iostream>

// data: begin
std::pair<torch::Tensor, torch::Tensor> Spirals(int64_t per_class, uint64_t seed) {
  torch::manual_seed(seed);
  torch::Tensor r = torch::linspace(0.0, 1.0, per_class).repeat(3);
  torch::Tensor labels = torch::arange(3).repeat_interleave(per_class);
  torch::Tensor angle = labels * (2 * M_PI / 3) + r * 4 + torch::randn({3 * per_class}) * 0.1;
  return {torch::stack({r * torch::sin(angle), r * torch::cos(angle)}, 1), labels};
}
// data: end

struct Mlp : torch::nn::Module {
  torch::nn::Linear hidden1{2, 64}, hidden2{64, 64}, logits{64, 3};
  Mlp() {
    register_module("hidden1", hidden1);
    register_module("hidden2", hidden2);
    register_module("logits", logits);
  }
  torch::Tensor forward(torch::Tensor x) {
    return logits(torch::relu(hidden2(torch::relu(hidden1(x)))));
  }
};

int main() {
  auto [train_x, train_y] = Spirals(1000, 1);
  auto [test_x, test_y] = Spirals(500, 2);
  Mlp model;
  torch::optim::Adam adam(model.parameters(), torch::optim::AdamOptions(0.01));
  for (int step = 1; step <= 1000; ++step) {
    adam.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(train_x), train_y);
    loss.backward();
    adam.step();
    if (step % 250 == 0) std::cout << "step " << step << " loss " << loss.item<float>() << "\n";
  }
  torch::NoGradGuard no_grad;
  torch::Tensor predicted = model.forward(test_x).argmax(1);
  std::cout << "held-out accuracy " << predicted.eq(test_y).to(torch::kFloat).mean().item<float>() << "\n";
}
