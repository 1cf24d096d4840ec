"""Accelerator profiles the generator and the mental-math drills draw from.

Figures are dense (no 2:4 sparsity) peaks from the vendors' datasheets; link bandwidths are
unidirectional per GPU. ``achievable_bus_fraction`` is the share of the scale-up link that a large
ring all-reduce reaches in practice (nccl-tests bus bandwidth lands near 80 % of the wire).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hardware:
    key: str
    name: str
    vendor: str  # "nvidia" | "amd"
    bf16_tflops: float  # dense peak, TFLOP/s
    hbm_gb: float  # capacity, GB (10^9 bytes)
    hbm_tbps: float  # HBM bandwidth, TB/s (10^12 bytes/s)
    scaleup_link: str  # "NVLink4", "xGMI", ...
    scaleup_gbps: float  # unidirectional per-GPU scale-up bandwidth, GB/s
    scaleout_gbps: float  # per-GPU scale-out (InfiniBand / RoCE) bandwidth, GB/s
    pcie_gbps: float  # host link, GB/s (one direction, measured-ish)
    num_sms: int  # SMs (NVIDIA) or CUs (AMD)
    launch_us: float  # typical cudaLaunchKernel / hipLaunchKernel CPU cost, µs
    sync_us: float  # round trip of a stream synchronize on an idle stream, µs
    achievable_bus_fraction: float = 0.80

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the roofline turns from memory- to compute-bound."""
        return (self.bf16_tflops * 1e12) / (self.hbm_tbps * 1e12)

    @property
    def achievable_busbw_gbps(self) -> float:
        return self.scaleup_gbps * self.achievable_bus_fraction

    @property
    def host_ring_busbw_gbps(self) -> float:
        """Bus bandwidth of a large ring all-reduce through the hosts over PCIe (NVLink
        peer-to-peer not in use): the same share of the PCIe link a ring reaches of NVLink."""
        return self.pcie_gbps * self.achievable_bus_fraction


HARDWARE: dict[str, Hardware] = {
    "a100": Hardware(
        key="a100",
        name="NVIDIA A100 SXM 80GB",
        vendor="nvidia",
        bf16_tflops=312.0,
        hbm_gb=80.0,
        hbm_tbps=2.039,
        scaleup_link="NVLink3",
        scaleup_gbps=300.0,
        scaleout_gbps=25.0,  # HDR200 per GPU
        pcie_gbps=25.0,  # PCIe4 x16, measured H2D
        num_sms=108,
        launch_us=9.0,
        sync_us=12.0,
    ),
    "h100": Hardware(
        key="h100",
        name="NVIDIA H100 SXM 80GB",
        vendor="nvidia",
        bf16_tflops=989.4,
        hbm_gb=80.0,
        hbm_tbps=3.35,
        scaleup_link="NVLink4",
        scaleup_gbps=450.0,
        scaleout_gbps=50.0,  # NDR400 per GPU
        pcie_gbps=55.0,  # PCIe5 x16, measured H2D
        num_sms=132,
        launch_us=7.0,
        sync_us=10.0,
    ),
    "h200": Hardware(
        key="h200",
        name="NVIDIA H200 SXM 141GB",
        vendor="nvidia",
        bf16_tflops=989.0,
        hbm_gb=141.0,
        hbm_tbps=4.8,
        scaleup_link="NVLink4",
        scaleup_gbps=450.0,
        scaleout_gbps=50.0,
        pcie_gbps=55.0,
        num_sms=132,
        launch_us=7.0,
        sync_us=10.0,
    ),
    "mi300x": Hardware(
        key="mi300x",
        name="AMD Instinct MI300X 192GB",
        vendor="amd",
        bf16_tflops=1307.4,
        hbm_gb=192.0,
        hbm_tbps=5.3,
        scaleup_link="xGMI",
        scaleup_gbps=448.0,  # 7 peers x 64 GB/s, all-to-all
        scaleout_gbps=50.0,
        pcie_gbps=55.0,
        num_sms=304,
        launch_us=10.0,
        sync_us=14.0,
    ),
}

DEFAULT_HARDWARE = "h100"


def get_hardware(key: str | None) -> Hardware:
    if key is None:
        return HARDWARE[DEFAULT_HARDWARE]
    try:
        return HARDWARE[key]
    except KeyError:
        raise ValueError(f"unknown hardware {key!r}; choose one of {', '.join(HARDWARE)}") from None
