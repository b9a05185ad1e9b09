// Links the installed runtime executor (test/package/FindPackage.cmake).
#include "ls2c/Runtime/CudnnAttention.h"
#include "ls2c/Runtime/Executor.h"

#include <cstdio>

int main() {
  std::printf("cuDNN attention in this runtime: %s\n",
              ls2c::runtime::cudnnAttentionAvailable() ? "yes" : "no");
  return 0;
}
