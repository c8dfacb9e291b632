/* A native program that uses the GPU: graphscope record's start-up hook cannot reach it, and
 * the run should name it (tests/test_gpu_record.py). Loads the CUDA driver, initialises it and
 * holds it for a moment so that record's once-a-second look at the process tree sees it. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) {
        fprintf(stderr, "no libcuda: %s\n", dlerror());
        return 1;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
    int status = init ? init(0) : -1;
    printf("{\"cuInit\": %d}\n", status);
    fflush(stdout);
    sleep(3);
    return status == 0 ? 0 : 1;
}
