"""Named views of a run's four arrays for the Python side of a run (issue 26): ``counters.w_labeled``
instead of ``ctr[S.C_W_LABELED]``.

The compiled kernels index ``prm``, ``iprm``, ``st`` and ``ctr`` by the slot constants of
``streamlearn.core.state``; the Python code around them (progress rows, summary, model files, the
API) reads and writes the same slots by name through a view. A view holds the array itself, not a
copy: reading an attribute reads the slot (the same numpy scalar ``array[slot]`` gives) and assigning
one stores into the array.

The names are derived, never listed by hand: every constant ``<prefix>NAME`` of
``streamlearn.core.state`` (``P_`` real settings, ``I_`` integer settings, ``S_`` learner state,
``C_`` counters) is the attribute ``name`` of its array's view (a Python keyword gets a trailing
underscore: ``P_LAMBDA`` is ``lambda_``), so renumbering or adding a slot there changes the views
with it. Slots declared elsewhere (a learner's own state slots in its module) are added with
``extra``, a {name: slot} dict (``slots_of`` reads one off a module): ``StateView(st, extra={"gravity": 12})``.

The views' own attributes start with an underscore (``_array``, ``_fields``, ``_asdict``, as
namedtuple's), so that no slot name can hide them. Making a view costs one small object: the run makes
them per block or per progress row, never per example.
"""

from __future__ import annotations

import keyword
from functools import lru_cache

from streamlearn.core import state as S


def attribute_name(constant: str, prefix: str) -> str:
    """The view attribute of a slot constant: ``C_W_LABELED`` -> ``w_labeled`` (keywords get a
    trailing underscore: ``P_LAMBDA`` -> ``lambda_``)."""
    name = constant[len(prefix):].lower()
    return name + "_" if keyword.iskeyword(name) else name


def slots_of(namespace, prefix: str) -> dict[str, int]:
    """{attribute name: slot} of the integer constants named ``<prefix>...`` of a module (or a dict of
    names), e.g. ``slots_of(streamlearn.core.state, "C_")``."""
    items = namespace if isinstance(namespace, dict) else vars(namespace)
    return {attribute_name(const, prefix): slot for const, slot in items.items()
            if const.startswith(prefix) and isinstance(slot, int) and not isinstance(slot, bool)}


def _slot(name: str, slot: int) -> property:
    def get(self):
        return self._array[slot]

    def put(self, value) -> None:
        self._array[slot] = value

    return property(get, put, doc=f"slot {slot} of the array ({name})")


class SlotView:
    """Attribute access to the named slots of one array (module docstring). A subclass names its
    array's slots with ``prefix`` (the constants of ``streamlearn.core.state``) and may add
    ``extra`` ones; ``SomeView(array, extra={name: slot})`` adds slots to one view."""

    __slots__ = ("_array",)
    _fields: dict[str, int] = {}      # every name of the view and its slot

    def __init_subclass__(cls, prefix: str | None = None, extra: dict | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = dict(cls._fields)
        named = slots_of(S, prefix) if prefix else {}
        for name, slot in list(named.items()) + list((extra or {}).items()):
            if name in fields:
                if fields[name] != slot:
                    raise ValueError(f"{cls.__name__}: '{name}' is slot {fields[name]}, not {slot}")
                continue
            if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or hasattr(cls, name):
                raise ValueError(f"{cls.__name__}: '{name}' cannot name a slot")
            setattr(cls, name, _slot(name, int(slot)))
            fields[name] = int(slot)
        cls._fields = fields

    def __new__(cls, array, extra: dict | None = None):
        if extra:
            cls = _extended(cls, tuple(sorted(extra.items())))
        view = object.__new__(cls)
        view._array = array
        return view

    def __reduce__(self):
        extra = {k: v for k, v in self._fields.items() if k not in self._base()._fields}
        return (self._base(), (self._array, extra or None))

    @classmethod
    def _base(cls) -> type:
        """The view class this one extends with extra slots (itself when it adds none)."""
        return getattr(cls, "_extends", cls)

    def _asdict(self) -> dict:
        """{name: value} of every slot, by slot."""
        return {name: self._array[slot] for name, slot in sorted(self._fields.items(), key=lambda kv: kv[1])}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self._asdict().items())})"


@lru_cache(maxsize=None)
def _extended(cls: type, extra: tuple) -> type:
    """``cls`` with the extra (name, slot) pairs (one class per combination, made once)."""
    return type(cls.__name__, (cls,), {"__slots__": (), "_extends": cls._base(), "__module__": cls.__module__},
                extra=dict(extra))


class SettingsView(SlotView, prefix="P_"):
    """The real settings ``prm`` (``P_*``)."""

    __slots__ = ()


class IntSettingsView(SlotView, prefix="I_"):
    """The integer settings ``iprm`` (``I_*``)."""

    __slots__ = ()


class StateView(SlotView, prefix="S_"):
    """The learner's state ``st`` (``S_*``; a learner's own slots with ``extra``)."""

    __slots__ = ()


class CounterView(SlotView, prefix="C_"):
    """The progress and summary counters ``ctr`` (``C_*``)."""

    __slots__ = ()
