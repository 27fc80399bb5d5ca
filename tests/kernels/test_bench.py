import pytest
import torch

from kernels import bench, device


def test_peak_lookup_by_device_name():
    assert device.peak_for_name("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert device.peak_for_name("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert device.peak_for_name("NVIDIA H200").dram_bytes_per_s == 4.8e12
    assert device.peak_for_name("NVIDIA B200").fp4_flops is not None
    assert device.peak_for_name("NVIDIA A100-SXM4-80GB") is None


def test_speed_of_light_picks_the_larger_time():
    h100 = device.PEAKS["H100"]
    mem = bench.speed_of_light(flops=1e9, bytes_moved=3.35e9, peak=h100)
    assert mem["bound"] == "memory" and mem["sol_us"] == pytest.approx(1e3)
    comp = bench.speed_of_light(flops=989.4e12, bytes_moved=1, peak=h100)
    assert comp["bound"] == "compute" and comp["sol_us"] == pytest.approx(1e6) and comp["tensor_peak"] == "bf16"
    # a measured bandwidth replaces the table's
    assert bench.speed_of_light(1, 3e9, h100, bandwidth=3e12)["dram_us"] == pytest.approx(1e3)


def test_time_calls_on_cpu_excludes_warmup_and_counts_inputs():
    calls = []
    res = bench.time_calls(lambda d: calls.append(d), [1, 2, 3], "cpu", repeats=4)
    assert len(calls) == 3 + 3 * 4  # one warm-up pass over all inputs, then 4 timed batches
    assert res["inputs_per_batch"] == 3 and res["repeats"] == 4 and res["timer"] == "wall-clock (CPU)"
    assert res["us_min"] <= res["us"] <= max(res["us_mean"] * 4, res["us"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_time_calls_on_gpu_uses_events():
    x = torch.randn(1024, 1024, device="cuda")
    res = bench.time_calls(lambda d: d @ d, [x, x.clone()], "cuda", repeats=3)
    assert res["timer"].startswith("cuda-events") and res["us"] > 0
    assert bench.measure_copy_bandwidth("cuda") > 1e11
