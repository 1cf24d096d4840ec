"""Which link a collective is measured against, from the device name in `deviceProperties`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from scenarios.engine.hardware import HARDWARE


@dataclass(frozen=True)
class Link:
    device: str
    name: str
    gbps: float  # unidirectional per GPU, GB/s
    achievable_fraction: float = 0.80
    pcie_gbps: float | None = None  # the GPU's host link, GB/s (a ring through the hosts)


# deviceProperties names as Kineto writes them ("NVIDIA A100-PG509-200", "NVIDIA H100 80GB HBM3")
_KNOWN: list[tuple[re.Pattern[str], Link]] = [
    (
        re.compile(rf"\b{k}", re.I),
        Link(hw.name, hw.scaleup_link, hw.scaleup_gbps, hw.achievable_bus_fraction,
             hw.pcie_gbps),
    )
    for k, hw in (("A100", HARDWARE["a100"]), ("H100", HARDWARE["h100"]),
                  ("H200", HARDWARE["h200"]), ("MI300X", HARDWARE["mi300x"]))
] + [
    (re.compile(r"V100", re.I), Link("NVIDIA V100", "NVLink2", 150.0)),  # 6 links x 25 GB/s
]  # fmt: skip


def link_for(device_name: str | None) -> Link | None:
    if not device_name:
        return None
    for rx, link in _KNOWN:
        if rx.search(device_name):
            return link
    return None
