// hold.cu: holds GPU memory for a while, for tests/real-gpu/run.sh.
// usage: hold SECONDS [MIB]   (MIB defaults to 512)
// Prints "pid N", the device's name and UUID, then "holding N MiB" once the
// memory is allocated and written, sleeps, frees and exits 0. Every CUDA call
// is checked; a failure prints the call and CUDA's message and exits 1.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      fprintf(stderr, "hold: %s failed: %s (%s)\n", #call, cudaGetErrorString(err_),       \
              cudaGetErrorName(err_));                                                     \
      fflush(stderr);                                                                      \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: hold SECONDS [MIB]\n");
    return 2;
  }
  int seconds = atoi(argv[1]);
  size_t mib = argc == 3 ? (size_t)atol(argv[2]) : 512;
  if (seconds < 0 || mib == 0) {
    fprintf(stderr, "hold: bad arguments\n");
    return 2;
  }
  printf("pid %d\n", (int)getpid());
  fflush(stdout);

  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
  printf("devices %d\ndevice0 %s\nuuid GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
         count, prop.name, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
         u[12], u[13], u[14], u[15]);
  fflush(stdout);

  void *p = NULL;
  CHECK(cudaMalloc(&p, mib << 20));
  CHECK(cudaMemset(p, 0xA5, mib << 20));
  CHECK(cudaDeviceSynchronize());
  printf("holding %zu MiB\n", mib);
  fflush(stdout);

  sleep((unsigned)seconds);

  CHECK(cudaFree(p));
  printf("freed\n");
  fflush(stdout);
  return 0;
}
