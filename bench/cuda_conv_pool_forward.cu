// A CUDA port of shaders/conv_pool_forward.comp (the unpadded case, LeNet-5's
// two layers), to time the kernel alone and read its hardware counters with
// Nsight Compute, which cannot profile Vulkan kernels (bench/README.md, issue
// 6). Not built by the Makefile; on a machine with nvcc:
//   nvcc -O3 -arch=sm_90 -lineinfo -o cuda_conv_pool_forward bench/cuda_conv_pool_forward.cu
//   ./cuda_conv_pool_forward 20      # each layer 100 times back to back in a CUDA graph, 20 graphs
//   ncu --clock-control none --kernel-name regex:conv_pool --section SpeedOfLight --section Occupancy \
//       --section WarpStateStats --section LaunchStats --section SchedulerStats \
//       --section MemoryWorkloadAnalysis ./cuda_conv_pool_forward 0   # one launch per layer, profiled
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// STAGING: 0 the image, then the weights, in rounds of LOADS (as the
// shader); 1 both in one round of 16 each, addresses clamped to the last
// entry (the shader's way); 2 the same with loads only where entries exist.
template <int KH, int KW, int POOL, int FB, int STAGING>
__global__ void __launch_bounds__(128) conv_pool_forward(const float *x, const float *w, const float *bias, float *y,
                                                         int *winners, int batch, int channels, int height, int width,
                                                         int out_w, int filters, int pooled_h, int pooled_w) {
    constexpr unsigned THREADS = 128, LOADS = 8, RUN = (POOL - 1) + KW, WINDOW = POOL * POOL;
    __shared__ float xs[4096];
    __shared__ float ws[3072];
    const unsigned tid = threadIdx.x;
    const unsigned pooled = pooled_h * pooled_w;
    const unsigned blocks = (filters + FB - 1) / FB, per_image = blocks * pooled;
    const unsigned item = blockIdx.x * THREADS + tid;
    const unsigned first_filter = blockIdx.x * THREADS / pooled * FB;
    const unsigned end_filter = min((unsigned)filters, ((blockIdx.x * THREADS + THREADS - 1) / pooled + 1) * FB);
    const unsigned kk = KH * KW, filter_floats = channels * kk;
    const unsigned plane = height * width, image_floats = channels * plane;
    const unsigned weight_floats = (end_filter - first_filter) * filter_floats;
    for (unsigned n = blockIdx.z; n < (unsigned)batch; n += gridDim.z) {
        __syncthreads();
        const float *xn = x + n * image_floats;
        if (STAGING == 0 || n != blockIdx.z) {
        for (unsigned i0 = tid; i0 < image_floats; i0 += LOADS * THREADS) {
            float v[LOADS];
#pragma unroll
            for (unsigned k = 0; k < LOADS; k++) v[k] = xn[min(i0 + k * THREADS, image_floats - 1)];
#pragma unroll
            for (unsigned k = 0; k < LOADS; k++)
                if (i0 + k * THREADS < image_floats) xs[i0 + k * THREADS] = v[k];
        }
        if (n == blockIdx.z) {
            for (unsigned i0 = tid; i0 < weight_floats; i0 += LOADS * THREADS) {
                float v[LOADS];
#pragma unroll
                for (unsigned k = 0; k < LOADS; k++)
                    v[k] = w[first_filter * filter_floats + min(i0 + k * THREADS, weight_floats - 1)];
#pragma unroll
                for (unsigned k = 0; k < LOADS; k++)
                    if (i0 + k * THREADS < weight_floats) ws[i0 + k * THREADS] = v[k];
            }
        }
        } else {
            constexpr unsigned L2 = 16;
            const float *wf = w + first_filter * filter_floats;
            for (unsigned i0 = tid; i0 < max(image_floats, weight_floats); i0 += L2 * THREADS) {
                float xv[L2], wv[L2];
#pragma unroll
                for (unsigned k = 0; k < L2; k++) {
                    unsigned i = i0 + k * THREADS;
                    if (STAGING == 1) {
                        xv[k] = xn[min(i, image_floats - 1)];
                        wv[k] = wf[min(i, weight_floats - 1)];
                    } else {
                        xv[k] = i < image_floats ? xn[i] : 0.f;
                        wv[k] = i < weight_floats ? wf[i] : 0.f;
                    }
                }
#pragma unroll
                for (unsigned k = 0; k < L2; k++) {
                    unsigned i = i0 + k * THREADS;
                    if (i < image_floats) xs[i] = xv[k];
                    if (i < weight_floats) ws[i] = wv[k];
                }
            }
        }
        __syncthreads();
        if (item >= per_image) continue;
        unsigned block = item / pooled, pos = item - block * pooled;
        unsigned f0 = block * FB;
        unsigned py = pos / pooled_w, px = pos - py * pooled_w;
        unsigned row0 = py * POOL, col0 = px * POOL;
        float acc[FB * WINDOW];
#pragma unroll
        for (int q = 0; q < FB * WINDOW; q++) acc[q] = 0.f;
        unsigned wbase[FB];
#pragma unroll
        for (int fb = 0; fb < FB; fb++) wbase[fb] = (min(f0 + fb, (unsigned)filters - 1) - first_filter) * filter_floats;
        for (unsigned c = 0; c < (unsigned)channels; c++) {
#pragma unroll
            for (int ki = 0; ki < KH; ki++) {
                unsigned wk = c * kk + ki * KW;
                float wr[FB * KW];
#pragma unroll
                for (int fb = 0; fb < FB; fb++)
#pragma unroll
                    for (int kj = 0; kj < KW; kj++) wr[fb * KW + kj] = ws[wbase[fb] + wk + kj];
#pragma unroll
                for (int a = 0; a < POOL; a++) {
                    unsigned at = c * plane + (row0 + a + ki) * width + col0;
                    float xr[RUN];
#pragma unroll
                    for (int t = 0; t < RUN; t++) xr[t] = xs[at + t];
#pragma unroll
                    for (int fb = 0; fb < FB; fb++)
#pragma unroll
                        for (int b = 0; b < POOL; b++)
#pragma unroll
                            for (int kj = 0; kj < KW; kj++) acc[fb * WINDOW + a * POOL + b] += wr[fb * KW + kj] * xr[b + kj];
                }
            }
        }
#pragma unroll
        for (int fb = 0; fb < FB; fb++) {
            unsigned f = f0 + fb;
            if (f >= (unsigned)filters) continue;
            float bv = bias[f];
            float best = 0.f;
            int win = 0;
#pragma unroll
            for (int q = 0; q < WINDOW; q++) {
                float v = acc[fb * WINDOW + q] + bv;
                v = v < 0.f ? 0.f : v;
                int index = (int(py) * POOL + q / POOL) * out_w + int(px) * POOL + q % POOL;
                if (q == 0 || v > best) { best = v; win = index; }
            }
            unsigned at = (n * filters + f) * pooled + pos;
            y[at] = best;
            winners[at] = best > 0.f ? win : -1;
        }
    }
}

template <int FB, int STAGING>
static void run(const char *name, int batch, int channels, int hw, int filters, int reps) {
    const int K = 5, out = hw - K + 1, pooled = out / 2;
    size_t nx = (size_t)batch * channels * hw * hw, nw = (size_t)filters * channels * K * K;
    size_t ny = (size_t)batch * filters * pooled * pooled;
    float *x, *w, *b, *y; int *win;
    cudaMalloc(&x, nx * 4); cudaMalloc(&w, nw * 4); cudaMalloc(&b, filters * 4); cudaMalloc(&y, ny * 4); cudaMalloc(&win, ny * 4);
    float *h = (float *)malloc(nx * 4);
    for (size_t i = 0; i < nx; i++) h[i] = (float)rand() / RAND_MAX - 0.5f;
    cudaMemcpy(x, h, nx * 4, cudaMemcpyHostToDevice);
    for (size_t i = 0; i < nw; i++) h[i] = (float)rand() / RAND_MAX - 0.5f;
    cudaMemcpy(w, h, nw * 4, cudaMemcpyHostToDevice);
    cudaMemset(b, 0, filters * 4);
    unsigned per_image = (filters + FB - 1) / FB * pooled * pooled, tiles = (per_image + 127) / 128;
    dim3 grid(tiles, 1, batch);
    auto k = conv_pool_forward<5, 5, 2, FB, STAGING>;
    k<<<grid, 128>>>(x, w, b, y, win, batch, channels, hw, hw, out, filters, pooled, pooled);
    cudaDeviceSynchronize();
    if (reps == 0) return; /* profiling: the one launch */
    // Back to back in a CUDA graph, as a captured step would run them.
    cudaStream_t s; cudaStreamCreate(&s);
    cudaGraph_t g; cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int r = 0; r < 100; r++) k<<<grid, 128, 0, s>>>(x, w, b, y, win, batch, channels, hw, hw, out, filters, pooled, pooled);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaGraphLaunch(ge, s); cudaStreamSynchronize(s);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0, s);
    for (int r = 0; r < reps; r++) cudaGraphLaunch(ge, s);
    cudaEventRecord(e1, s); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    printf("%s: grid %u x 1 x %d, %.2f us per kernel (100 back to back in a graph, %d graphs)\n", name, tiles, batch,
           1000.f * ms / (100.f * reps), reps);
    cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(win); free(h);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    run<2, 0>("conv1 batch 64 (FB 2) separate", 64, 1, 28, 6, reps);
    run<2, 1>("conv1 batch 64 (FB 2) combined clamped", 64, 1, 28, 6, reps);
    run<2, 2>("conv1 batch 64 (FB 2) combined predicated", 64, 1, 28, 6, reps);
    run<1, 0>("conv2 batch 64 (FB 1) separate", 64, 6, 12, 16, reps);
    run<1, 1>("conv2 batch 64 (FB 1) combined clamped", 64, 6, 12, 16, reps);
    run<1, 2>("conv2 batch 64 (FB 1) combined predicated", 64, 6, 12, 16, reps);
    run<2, 0>("conv1 batch 256 (FB 2) separate", 256, 1, 28, 6, reps);
    run<2, 1>("conv1 batch 256 (FB 2) combined clamped", 256, 1, 28, 6, reps);
    run<2, 2>("conv1 batch 256 (FB 2) combined predicated", 256, 1, 28, 6, reps);
    run<2, 0>("conv2 batch 256 (FB 2) separate", 256, 6, 12, 16, reps);
    run<2, 1>("conv2 batch 256 (FB 2) combined clamped", 256, 6, 12, 16, reps);
    run<2, 2>("conv2 batch 256 (FB 2) combined predicated", 256, 6, 12, 16, reps);
    return 0;
}
