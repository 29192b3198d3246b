"""The exception and the small objects of the jtop compatibility API."""
from typing import Any, Dict, List, Optional


class JtopException(Exception):
    """Raised for everything jtop cannot do: no daemon, controls, ..."""


def _no_control(what: str, how: str) -> JtopException:
    return JtopException("edgemon has no control operations yet: cannot %s (do it with %s)"
                         % (what, how))


class NVPModel(object):
    """The current power mode: ``str(m)`` is its name, ``m.id`` its number."""

    def __init__(self, name: str, mode_id: Optional[int], modes: Dict[int, str]) -> None:
        self.name = name
        self.id = mode_id
        self.modes = [modes[k] for k in sorted(modes)]

    @property
    def models(self) -> List[str]:
        return list(self.modes)

    def get_nvpmodel_id(self) -> Optional[int]:
        return self.id

    def set_nvpmodel_id(self, nvpmodel_id: int, force: bool = False) -> None:
        raise _no_control("set nvpmodel %s" % nvpmodel_id, "`sudo nvpmodel -m ID`")

    def set_nvpmodel_name(self, name: str, force: bool = False) -> None:
        raise _no_control("set nvpmodel %s" % name, "`sudo nvpmodel -m ID`")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, NVPModel):
            return (self.name, self.id) == (other.name, other.id)
        if isinstance(other, int):
            return self.id == other
        return self.name == other

    def __hash__(self) -> int:
        return hash(self.name)


class JetsonClocks(object):
    """jetson_clocks as edgemon infers it (every online CPU core and the GPU
    pinned at min == max). ``bool(jc)`` tells whether it looks active."""

    def __init__(self, active: bool) -> None:
        self._active = active

    def __bool__(self) -> bool:
        return self._active

    @property
    def status(self) -> str:
        return "running" if self._active else "inactive"

    def get_status(self) -> str:
        return self.status

    @property
    def boot(self) -> bool:
        return False

    @boot.setter
    def boot(self, value: bool) -> None:
        raise _no_control("change jetson_clocks at boot", "`sudo jetson_clocks`")

    def set_enable(self, value: bool) -> None:
        raise _no_control("switch jetson_clocks", "`sudo jetson_clocks`")

    def set_boot(self, value: bool) -> None:
        raise _no_control("change jetson_clocks at boot", "`sudo jetson_clocks`")

    def __str__(self) -> str:
        return self.status

    def __repr__(self) -> str:
        return self.status


class Fan(dict):
    """jetson.fan: {name: {'speed': [%], 'rpm': [rpm], 'profile', 'governor', 'control'}}.
    Reading ``fan.speed`` gives the first fan's speed (%); setting it raises."""

    @property
    def speed(self) -> Optional[float]:
        for f in self.values():
            return f["speed"][0] if f["speed"] else None
        return None

    @speed.setter
    def speed(self, value: float) -> None:
        setter = getattr(self, "_set_speed", None)
        if setter is None:
            raise _no_control("set the fan speed", "`sudo jetson_clocks --fan` or nvfancontrol")
        setter(value)

    @property
    def profile(self) -> Optional[str]:
        for f in self.values():
            return f["profile"]
        return None

    @profile.setter
    def profile(self, value: str) -> None:
        raise _no_control("set the fan profile", "nvfancontrol")

    def set_speed(self, speed: float, name: Optional[str] = None, idx: int = 0) -> None:
        self.speed = speed

    def set_profile(self, profile: str, name: Optional[str] = None) -> None:
        raise _no_control("set the fan profile", "nvfancontrol")

    def get_speed(self, name: Optional[str] = None, idx: int = 0) -> Optional[float]:
        f = self.get(name) if name else next(iter(self.values()), None)
        return f["speed"][idx] if f and len(f["speed"]) > idx else None

    def get_profile(self, name: Optional[str] = None) -> Optional[str]:
        f = self.get(name) if name else next(iter(self.values()), None)
        return f["profile"] if f else None

    def all_profiles(self, name: Optional[str] = None) -> List[str]:
        return []
