/* The NVML monitor: absent NVML is not an error; with a GPU, readings are plausible. */
#include <criterion/criterion.h>
#include <math.h>

#include "device/gpu.h"
#include "device/monitor.h"

Test(monitor, null_monitor_reads_unknown)
{
    monitor_sample s;
    cr_expect_eq(monitor_read(NULL, &s), -1);
    cr_expect(isnan(s.sm_mhz) && isnan(s.mem_mhz) && isnan(s.temperature_c) && isnan(s.power_w));
    cr_expect_eq(s.throttle_reasons, -1);
    char buf[64];
    cr_expect_null(monitor_driver_version(NULL, buf, sizeof buf));
    monitor_close(NULL);
}

Test(monitor, gpu_readings_are_plausible)
{
    tune_error err = {0};
    gpu_info info;
    if (gpu_query(0, &info, &err) != TUNE_OK)
        cr_skip_test("skipped: %s", err.message);
    monitor *m = monitor_open(info.pci_bus_id);
    if (!m)
        cr_skip_test("skipped: NVML (libnvidia-ml.so.1) is not available");
    monitor_sample s;
    cr_assert_eq(monitor_read(m, &s), 0);
    cr_expect(s.sm_mhz > 0 && s.sm_mhz < 5000, "SM clock %g MHz", s.sm_mhz);
    cr_expect(s.mem_mhz > 0, "memory clock %g MHz", s.mem_mhz);
    cr_expect(s.temperature_c > 0 && s.temperature_c < 120, "temperature %g C", s.temperature_c);
    char buf[80];
    cr_expect_not_null(monitor_driver_version(m, buf, sizeof buf));
    monitor_close(m);
}

Test(monitor, throttled_means_a_slowdown_reason)
{
    monitor_sample idle = {1980, 3201, 40, 100, 0x1}, power_cap = {1500, 3201, 70, 700, 0x4};
    monitor_sample app_clocks = {1800, 3201, 40, 100, 0x2}, thermal = {1400, 3201, 90, 650, 0x20};
    monitor_sample unknown = {NAN, NAN, NAN, NAN, -1};
    cr_expect_not(monitor_throttled(&idle, &idle), "idle is not a slowdown");
    cr_expect_not(monitor_throttled(&app_clocks, &idle), "application clocks are a setting");
    cr_expect(monitor_throttled(&idle, &power_cap));
    cr_expect(monitor_throttled(&thermal, &idle));
    cr_expect_not(monitor_throttled(&unknown, &unknown), "unknown is not throttled");
}
