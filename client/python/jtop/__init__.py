"""jtop compatibility: jetson-stats' Python API (4.2 and later) served by edgemond.

    from jtop import jtop
    with jtop() as jetson:
        while jetson.ok():
            print(jetson.stats)

The data comes from edgemond ($EDGEMON_CONNECT or its default socket); there is
no jtop service and no version to match. Differences from jetson-stats (see the
README, section Python): power['rail'][X]['avg'] is the true time average since
this client started, power['tot']['name'] names the rail the total comes from,
every client samples at its own interval, an offline sensor has 'online': False
and None (not -256), and the controls (jetson_clocks, nvpmodel, fan) raise
JtopException: edgemon has no control operations yet.
"""
from .core import JtopException
from .jtop import jtop

__all__ = ["jtop", "JtopException"]
__version__ = "4.2.0+edgemon"
