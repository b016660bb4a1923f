// Device half of the test extension: a kernel plus host entry points that need no GPU.
#include <cuda_runtime.h>

__global__ void add_one_kernel(float* data, int count) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index < count) {
        data[index] += 1.0f;
    }
}

// The CUDA runtime version the extension runs against (e.g. 12010); works without a driver.
int cuda_runtime_version() {
    int version = 0;
    cudaRuntimeGetVersion(&version);
    return version;
}

// Launch on device memory; returns the CUDA error code (0 on success). A launch that cannot start (no
// machine code for this GPU) reports only through cudaGetLastError: synchronising alone returns success.
int launch_add_one(float* data, int count) {
    int threads = 128;
    add_one_kernel<<<(count + threads - 1) / threads, threads>>>(data, count);
    cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) {
        return static_cast<int>(launched);
    }
    return static_cast<int>(cudaDeviceSynchronize());
}

const char* cuda_error_text(int status) {
    return cudaGetErrorString(static_cast<cudaError_t>(status));
}
