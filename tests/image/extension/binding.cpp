// Host half of the test extension: Python bindings through torch.
#include <torch/extension.h>

int cuda_runtime_version();
int launch_add_one(float* data, int count);
const char* cuda_error_text(int status);

torch::Tensor add_one(torch::Tensor tensor) {
    TORCH_CHECK(tensor.is_cuda() && tensor.scalar_type() == torch::kFloat32, "add_one needs a float32 CUDA tensor");
    auto result = tensor.contiguous().clone();
    int status = launch_add_one(result.data_ptr<float>(), static_cast<int>(result.numel()));
    TORCH_CHECK(status == 0, "add_one kernel failed: ", cuda_error_text(status), " (CUDA error ", status, ")");
    return result;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
    module.def("runtime_version", &cuda_runtime_version, "CUDA runtime version the extension runs against");
    module.def("add_one", &add_one, "add 1 to every element, on the GPU");
}
