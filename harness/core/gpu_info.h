/* gpu_info.h - what tune records of a GPU: filled by gpu_query (device/gpu.h) in a process that
 * owns the device, written into meta.json (store/meta.h) and the calibration files by processes
 * that never touch CUDA. A plain struct, no CUDA type.
 *
 *   gpu_info gi;
 *   gpu_query(0, &gi, &err);                 // device layer
 *   printf("%s, %d SMs\n", gi.name, gi.sm_count);
 */
#ifndef TUNE_GPU_INFO_H
#define TUNE_GPU_INFO_H

#include <stddef.h>

typedef struct {
    int ordinal;
    char name[256];
    char pci_bus_id[32];
    char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi shows it; "" unknown */
    int cc_major, cc_minor;
    int sm_count;
    size_t l2_bytes;
    size_t global_mem;
    int sm_clock_khz;  /* maximum SM clock */
    int mem_clock_khz; /* maximum memory clock */
    int mem_bus_bits;
    int driver_version, runtime_version; /* 13000 = 13.0 */
} gpu_info;

#endif
