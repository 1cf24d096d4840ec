"""Analysis of uploaded PyTorch-profiler (Kineto) traces. Pure: numpy and orjson, no Django.

ranks = [kineto.parse(obj, source=name) for name, obj in files]
ranks = convert.assemble(ranks)
timeline = convert.to_timeline(ranks); perfetto = convert.to_perfetto(ranks)
report = analyse(ranks)   # per rank/step breakdown, measurements, skew, findings
"""

from .analyse import analyse
from .convert import assemble, to_perfetto, to_timeline
from .errors import TraceError
from .kineto import RankTrace, parse

__all__ = ["RankTrace", "TraceError", "analyse", "assemble", "parse", "to_perfetto", "to_timeline"]
