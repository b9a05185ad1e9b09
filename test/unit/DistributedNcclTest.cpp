//===- DistributedNcclTest.cpp - the NCCL communicator wrapper ------------===//
//
// runtime/include/ls2c/Runtime/DistributedNccl.h. Without a GPU only the
// library-level calls run (NCCL's version, error strings); every test that
// needs a device skips (GTEST_SKIP), never fails. With one GPU: a world of 1
// through the environment path (rendezvous included), fp32 and bf16, every
// reduction, groups and the refusals. With two or more: one thread per GPU
// joins one communicator and the sums and means are checked exactly.
//
//===----------------------------------------------------------------------===//
#include "ls2c/Runtime/DistributedNccl.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <thread>
#include <vector>

namespace {

using namespace ls2c::runtime;

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky "no driver / no device" error
    return 0;
  }
  return n;
}

#define REQUIRE_GPUS(n)                                                        \
  do {                                                                         \
    int have = deviceCount();                                                  \
    if (have < (n))                                                            \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << have;    \
  } while (0)

uint16_t bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16); // exact for the values used here
}

float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Nccl, LibraryWithoutGpu) {
  std::string v = ncclLibraryVersion();
  EXPECT_EQ(v.rfind("2.", 0), 0u) << v;
  EXPECT_FALSE(ncclResultText(0).empty());
  EXPECT_NE(ncclResultText(4), ncclResultText(0)); // ncclInvalidArgument
  EXPECT_STREQ(reductionName(Reduction::Sum), "sum");
  EXPECT_STREQ(reductionName(Reduction::SumThenScale), "sum_then_scale");
  EXPECT_STREQ(reductionName(Reduction::Average), "average");
  EXPECT_EQ(kNcclUniqueIdBytes, 128u);
  try {
    NcclCommunicator c(std::string(12, 'x'), 0, 1);
    ADD_FAILURE() << "accepted a 12-byte id";
  } catch (const NcclError &e) {
    EXPECT_STREQ(e.what(), "ncclUniqueId of 12 bytes: must be 128");
  }
  try {
    NcclCommunicator c(std::string(128, 'x'), 2, 2);
    ADD_FAILURE() << "accepted rank 2 of 2";
  } catch (const NcclError &e) {
    EXPECT_STREQ(e.what(), "rank 2 of world size 2: must be in [0, world size)");
  }
}

TEST(Nccl, OneRankThroughTheEnvironment) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  DistributedEnv env; // RANK=0, WORLD_SIZE=1
  NcclCommunicator comm = NcclCommunicator::fromEnvironment(env);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.worldSize(), 1);
  EXPECT_EQ(comm.device(), 0);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);

  const size_t n = 1000;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(i) * 0.5f - 100.0f;
  void *d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * 4), cudaSuccess);
  for (Reduction red : {Reduction::Sum, Reduction::SumThenScale, Reduction::Average}) {
    ASSERT_EQ(cudaMemcpy(d, host.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    comm.allReduce(d, n, DType::F32, red, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> back(n);
    ASSERT_EQ(cudaMemcpy(back.data(), d, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(back, host) << reductionName(red);
  }
  std::vector<uint16_t> h16(n), back16(n);
  for (size_t i = 0; i < n; ++i)
    h16[i] = bf16(host[i]);
  ASSERT_EQ(cudaMemcpy(d, h16.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  {
    NcclGroup group; // two buckets in one launch
    comm.allReduce(d, n / 2, DType::BF16, Reduction::Average, stream);
    comm.allReduce(static_cast<char *>(d) + n, n / 2, DType::BF16, Reduction::Sum, stream);
    EXPECT_EQ(NcclGroup::depth(), 1);
    try {
      comm.allReduce(d, n, DType::BF16, Reduction::SumThenScale, stream);
      ADD_FAILURE() << "sum_then_scale accepted inside a group";
    } catch (const NcclError &e) {
      EXPECT_NE(std::string(e.what()).find("inside an NcclGroup"), std::string::npos);
    }
    group.end();
  }
  EXPECT_EQ(NcclGroup::depth(), 0);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back16.data(), d, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back16, h16);
  try {
    comm.allReduce(d, n, DType::F16, Reduction::Sum, stream);
    ADD_FAILURE() << "f16 accepted";
  } catch (const NcclError &e) {
    EXPECT_STREQ(e.what(), "all-reduce in f16: gradients reduce in f32 or bf16 only");
  }
  comm.checkAsyncError();
  cudaFree(d);
  cudaStreamDestroy(stream);
}

TEST(Nccl, OneThreadPerGpu) {
  REQUIRE_GPUS(2);
  const int world = deviceCount();
  const std::string id = ncclMakeUniqueId();
  const size_t n = (1 << 20) + 3; // not a multiple of anything
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      try {
        if (cudaSetDevice(rank) != cudaSuccess)
          throw std::runtime_error("cudaSetDevice failed");
        NcclCommunicator comm(id, rank, world);
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        // fp32: rank r holds r + 1 everywhere; sum, mean (both ways).
        std::vector<float> h(n, float(rank + 1)), back(n);
        void *d = nullptr;
        cudaMalloc(&d, n * 4);
        float sum = float(world * (world + 1) / 2), mean = sum / float(world);
        struct Case {
          Reduction r;
          float expect;
        } cases[] = {{Reduction::Sum, sum},
                     {Reduction::SumThenScale, mean},
                     {Reduction::Average, mean}};
        for (const Case &c : cases) {
          cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice);
          comm.allReduce(d, n, DType::F32, c.r, stream);
          cudaStreamSynchronize(stream);
          cudaMemcpy(back.data(), d, n * 4, cudaMemcpyDeviceToHost);
          for (size_t i = 0; i < n; i += 4099)
            if (back[i] != c.expect)
              throw std::runtime_error(std::string("f32 ") + reductionName(c.r) +
                                       ": " + std::to_string(back[i]) + " != " +
                                       std::to_string(c.expect));
        }
        // bf16: small integers are exact.
        std::vector<uint16_t> h16(n, bf16(float(rank + 1))), back16(n);
        cudaMemcpy(d, h16.data(), n * 2, cudaMemcpyHostToDevice);
        comm.allReduce(d, n, DType::BF16, Reduction::Sum, stream);
        cudaStreamSynchronize(stream);
        cudaMemcpy(back16.data(), d, n * 2, cudaMemcpyDeviceToHost);
        if (fromBf16(back16[n - 1]) != sum)
          throw std::runtime_error("bf16 sum: " + std::to_string(fromBf16(back16[n - 1])));
        comm.checkAsyncError();
        cudaFree(d);
        cudaStreamDestroy(stream);
      } catch (const std::exception &e) {
        errors[size_t(rank)] = e.what();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int rank = 0; rank < world; ++rank)
    EXPECT_EQ(errors[size_t(rank)], "") << "rank " << rank;
}

} // namespace
