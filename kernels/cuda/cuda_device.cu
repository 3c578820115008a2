// The CUDA implementation of the harness's device-ops hook (harness/include/attest/device.h).
// Called only inside the runner's forked worker, so a context poisoned by an illegal address
// dies with that worker and the campaign goes on.
#include <cuda_runtime.h>
#include <stdio.h>

#include "attest/cuda_candidates.h"
#include "attest/device.h"

namespace {

cudaError_t last_status = cudaSuccess;

int remember(cudaError_t st)
{
    if (st != cudaSuccess) last_status = st;
    return st == cudaSuccess ? 0 : 1;
}

int cuda_open(char *msg, size_t cap)
{
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || count == 0) {
        snprintf(msg, cap, "no CUDA device: %s",
                 st != cudaSuccess ? cudaGetErrorString(st) : "cudaGetDeviceCount() found none");
        last_status = st;
        return 1;
    }
    if (remember(cudaSetDevice(0)) || remember(cudaFree(nullptr))) {
        snprintf(msg, cap, "cannot initialize CUDA device 0: %s", cudaGetErrorString(last_status));
        return 1;
    }
    return 0;
}

int cuda_describe(char *buf, size_t cap)
{
    cudaDeviceProp prop;
    int runtime = 0, driver = 0;
    if (remember(cudaGetDeviceProperties(&prop, 0))) return 1;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    snprintf(buf, cap, "%s (sm_%d%d, %.0f GiB), CUDA runtime %d.%d, driver %d.%d", prop.name,
             prop.major, prop.minor, (double)prop.totalGlobalMem / (1 << 30), runtime / 1000,
             (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10);
    return 0;
}

int cuda_alloc(void **dptr, size_t bytes) { return remember(cudaMalloc(dptr, bytes)); }

void cuda_free(void *dptr)
{
    if (dptr) cudaFree(dptr);
}

int cuda_copy_h2d(void *dst, const void *src, size_t bytes)
{
    return remember(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

int cuda_copy_d2h(void *dst, const void *src, size_t bytes)
{
    return remember(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

int cuda_synchronize(void)
{
    if (remember(cudaGetLastError())) return 1;
    return remember(cudaDeviceSynchronize());
}

const char *cuda_last_error(void) { return cudaGetErrorString(last_status); }

// Device timing for attest bench: events on the stream candidates launch on.
cudaEvent_t timer_events[2];

int cuda_timer_start(void)
{
    for (cudaEvent_t &e : timer_events)
        if (!e && remember(cudaEventCreate(&e))) return 1;
    return remember(cudaEventRecord(timer_events[0], cudaStreamPerThread));
}

int cuda_timer_stop(double *ms)
{
    float elapsed = 0.0f;
    if (remember(cudaEventRecord(timer_events[1], cudaStreamPerThread)) ||
        remember(cudaEventSynchronize(timer_events[1])) ||
        remember(cudaEventElapsedTime(&elapsed, timer_events[0], timer_events[1])))
        return 1;
    *ms = elapsed;
    return 0;
}

// The graph check: candidates launch on cudaStreamPerThread, so that is the stream captured.
// Relaxed mode lets a candidate's host code do what it would do eagerly (a bug that reads
// lengths back on a stream of its own must be captured, not refused).
cudaGraph_t graph;
cudaGraphExec_t graph_exec;

void cuda_graph_release(void)
{
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    graph_exec = nullptr;
    graph = nullptr;
}

int cuda_graph_begin(void)
{
    cuda_graph_release();
    return remember(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed));
}

int cuda_graph_end(void)
{
    if (remember(cudaStreamEndCapture(cudaStreamPerThread, &graph))) {
        graph = nullptr;
        return 1;
    }
    if (remember(cudaGraphInstantiate(&graph_exec, graph, 0))) {
        graph_exec = nullptr;
        return 1;
    }
    return 0;
}

int cuda_graph_launch(void) { return remember(cudaGraphLaunch(graph_exec, cudaStreamPerThread)); }

attest_device_ops make_ops()
{
    attest_device_ops ops = {};
    ops.struct_size = sizeof(attest_device_ops);
    ops.name = "cuda";
    ops.open = cuda_open;
    ops.describe = cuda_describe;
    ops.alloc = cuda_alloc;
    ops.free = cuda_free;
    ops.copy_h2d = cuda_copy_h2d;
    ops.copy_d2h = cuda_copy_d2h;
    ops.synchronize = cuda_synchronize;
    ops.last_error = cuda_last_error;
    ops.timer_start = cuda_timer_start;
    ops.timer_stop = cuda_timer_stop;
    ops.graph_begin = cuda_graph_begin;
    ops.graph_end = cuda_graph_end;
    ops.graph_launch = cuda_graph_launch;
    ops.graph_release = cuda_graph_release;
    return ops;
}

const attest_device_ops cuda_ops = make_ops();

}  // namespace

extern "C" const attest_device_ops *attest_cuda_device_ops(void) { return &cuda_ops; }
