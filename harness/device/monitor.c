#include "device/monitor.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "core/clock.h"

/* The few NVML entry points used, with their C types (nvml.h is not needed to build). */
typedef int nvml_ret;
typedef void *nvml_device;
enum { NVML_OK = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

struct monitor {
    void *lib;
    nvml_device dev;
    nvml_ret (*shutdown)(void);
    nvml_ret (*clock)(nvml_device, int, unsigned *);
    nvml_ret (*temperature)(nvml_device, int, unsigned *);
    nvml_ret (*power)(nvml_device, unsigned *);
    nvml_ret (*throttle)(nvml_device, unsigned long long *);
    nvml_ret (*driver)(char *, unsigned);
    nvml_ret (*energy)(nvml_device, unsigned long long *);
};

monitor *monitor_open(const char *pci_bus_id)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlInit_v2");
    nvml_ret (*by_bus)(const char *, nvml_device *) =
        (nvml_ret(*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    monitor *m = calloc(1, sizeof *m);
    if (!m || !init || !by_bus || init() != NVML_OK) {
        free(m);
        dlclose(lib);
        return NULL;
    }
    m->lib = lib;
    m->shutdown = (nvml_ret(*)(void))dlsym(lib, "nvmlShutdown");
    if (by_bus(pci_bus_id, &m->dev) != NVML_OK) {
        monitor_close(m);
        return NULL;
    }
    m->clock = (nvml_ret(*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
    m->temperature =
        (nvml_ret(*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetTemperature");
    m->power = (nvml_ret(*)(nvml_device, unsigned *))dlsym(lib, "nvmlDeviceGetPowerUsage");
    m->throttle = (nvml_ret(*)(nvml_device, unsigned long long *))dlsym(
        lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!m->throttle)
        m->throttle = (nvml_ret(*)(nvml_device, unsigned long long *))dlsym(
            lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    m->driver = (nvml_ret(*)(char *, unsigned))dlsym(lib, "nvmlSystemGetDriverVersion");
    m->energy = (nvml_ret(*)(nvml_device, unsigned long long *))dlsym(
        lib, "nvmlDeviceGetTotalEnergyConsumption");
    return m;
}

void monitor_close(monitor *m)
{
    if (!m)
        return;
    if (m->shutdown)
        m->shutdown();
    dlclose(m->lib);
    free(m);
}

int monitor_read(monitor *m, monitor_sample *out)
{
    out->sm_mhz = out->mem_mhz = out->temperature_c = out->power_w = NAN;
    out->throttle_reasons = -1;
    if (!m)
        return -1;
    unsigned v;
    unsigned long long r;
    if (m->clock && m->clock(m->dev, NVML_CLOCK_SM, &v) == NVML_OK)
        out->sm_mhz = v;
    if (m->clock && m->clock(m->dev, NVML_CLOCK_MEM, &v) == NVML_OK)
        out->mem_mhz = v;
    if (m->temperature && m->temperature(m->dev, NVML_TEMPERATURE_GPU, &v) == NVML_OK)
        out->temperature_c = v;
    if (m->power && m->power(m->dev, &v) == NVML_OK)
        out->power_w = v / 1000.0;
    if (m->throttle && m->throttle(m->dev, &r) == NVML_OK)
        out->throttle_reasons = (long long)r;
    return 0;
}

const char *monitor_driver_version(monitor *m, char *buf, size_t size)
{
    if (!m || !m->driver || m->driver(buf, (unsigned)size) != NVML_OK)
        return NULL;
    return buf;
}

int monitor_throttled(const monitor_sample *a, const monitor_sample *b)
{
    return (a->throttle_reasons > 0 && (a->throttle_reasons & MONITOR_SLOWDOWN_MASK)) ||
           (b->throttle_reasons > 0 && (b->throttle_reasons & MONITOR_SLOWDOWN_MASK));
}

int monitor_energy(monitor *m, double *joules)
{
    unsigned long long mj;
    if (!m || !m->energy || m->energy(m->dev, &mj) != NVML_OK)
        return -1;
    *joules = (double)mj * 1e-3;
    return 0;
}

int monitor_energy_period(monitor *m, double max_s, double *period_s)
{
    double e0, e, t0 = clock_now(), first = 0, last = 0;
    int changes = 0;
    if (monitor_energy(m, &e0) != 0)
        return -1;
    while (changes < 3 && clock_now() - t0 < max_s) {
        if (monitor_energy(m, &e) != 0)
            return -1;
        if (e != e0) {
            last = clock_now();
            if (changes++ == 0)
                first = last;
            e0 = e;
        }
    }
    if (changes < 3)
        return -1;
    *period_s = (last - first) / 2;
    return 0;
}
