/* monitor.h - clocks, temperature, power and throttle reasons of a GPU through NVML, opened with
 * dlopen so that binaries start on machines without a driver.
 *
 *   monitor *m = monitor_open(info.pci_bus_id);   // NULL when NVML is absent: not an error
 *   monitor_sample s;
 *   if (monitor_read(m, &s) == 0) printf("%.0f MHz\n", s.sm_mhz);
 *   monitor_close(m);
 *
 * tune only reads: it never changes clocks or any other setting of the GPU.
 */
#ifndef TUNE_MONITOR_H
#define TUNE_MONITOR_H

#include <stddef.h>

typedef struct {
    double sm_mhz, mem_mhz; /* current clocks */
    double temperature_c;
    double power_w;
    long long throttle_reasons; /* NVML's clocks-event/throttle bit mask; -1 when unknown */
} monitor_sample;

typedef struct monitor monitor;

/* New monitor of the device with this PCI bus id ("0000:00:06.0"), or NULL without NVML. */
monitor *monitor_open(const char *pci_bus_id);
void monitor_close(monitor *m);
/* 0 and a sample (NAN / -1 for what NVML could not say), -1 when m is NULL. */
int monitor_read(monitor *m, monitor_sample *out);
/* NVML reasons that lower clocks below what the card would run at: SW power cap (0x4), HW slowdown
 * (0x8), SW thermal (0x20), HW thermal (0x40), HW power brake (0x80). Idle (0x1), application
 * clocks (0x2), sync boost (0x10) and display clocks (0x100) do not count. */
#define MONITOR_SLOWDOWN_MASK 0xECLL
/* 1 when either sample shows a slowdown reason. */
int monitor_throttled(const monitor_sample *a, const monitor_sample *b);

/* NVML's total energy counter of the device (nvmlDeviceGetTotalEnergyConsumption: joules since
 * the driver loaded, counted in mJ, Volta and newer) into *joules: 0, or -1 when m is NULL or the
 * device has no counter. */
int monitor_energy(monitor *m, double *joules);
/* The counter's update period: the host polls it until it has changed three times (at most
 * max_s seconds) and returns the mean time between changes, in seconds, into *period_s: 0, or -1
 * when it has no counter or the counter did not change three times. */
int monitor_energy_period(monitor *m, double max_s, double *period_s);

/* The driver version NVML reports ("580.159.04"), or NULL. */
const char *monitor_driver_version(monitor *m, char *buf, size_t size);

#endif
