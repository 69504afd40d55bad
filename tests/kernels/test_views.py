"""The named views of a run's arrays (streamlearn.run.views): every slot constant of
streamlearn.core.state has one attribute on its array's view, the names are unique and shadow
nothing, reads give the array's own values and writes store into the array (views, not copies), and
extra slots (a learner's own) add to a view."""

import keyword
import math
import pickle

import numpy as np
import pytest

from streamlearn.config import train_config
from streamlearn.core import state as S
from streamlearn.run.runstate import RunState
from streamlearn.run.views import CounterView, IntSettingsView, SettingsView, SlotView, StateView, slots_of

#: each view, the prefix of its constants, the size of its array
VIEWS = ((SettingsView, "P_", S.N_PRM), (IntSettingsView, "I_", S.N_IPRM), (StateView, "S_", S.N_ST),
         (CounterView, "C_", S.N_CTR))


def constants(prefix: str) -> dict[str, int]:
    return {k: v for k, v in vars(S).items() if k.startswith(prefix) and isinstance(v, int)}


@pytest.mark.parametrize("view, prefix, size", VIEWS)
def test_every_constant_is_named(view, prefix, size):
    names = view._fields
    consts = constants(prefix)
    assert consts, prefix
    assert len(names) == len(consts)                    # one name per constant: none lost to a clash
    for const, slot in consts.items():
        name = const[len(prefix):].lower()
        name = name + "_" if keyword.iskeyword(name) else name
        assert names[name] == slot, const
        assert 0 <= slot < size, const
    assert len(set(names.values())) == len(names)       # no two names on one slot


@pytest.mark.parametrize("view, prefix, size", VIEWS)
def test_names_are_attributes_that_hide_nothing(view, prefix, size):
    for name in view._fields:
        assert name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_"), name
        assert not hasattr(SlotView, name) and not hasattr(object, name), name


@pytest.mark.parametrize("view, prefix, size", VIEWS)
def test_reads_and_writes_go_to_the_array(view, prefix, size):
    dtype = np.int64 if prefix == "I_" else np.float64
    array = np.arange(size, dtype=dtype) * 3
    v = view(array)
    for name, slot in v._fields.items():
        got = getattr(v, name)
        assert got == array[slot] and type(got) is type(array[slot]), name
        setattr(v, name, 1000 + slot)
        assert array[slot] == 1000 + slot, name
    assert view(array)._array is array
    with pytest.raises(AttributeError):
        v.not_a_slot = 1.0                              # a misspelt name is an error, not a new attribute


def test_counter_names_as_the_python_side_uses_them():
    ctr = np.zeros(S.N_CTR)
    c = CounterView(ctr)
    c.w_labeled = 2.5
    c.ho_w_since += 1.0
    c.dump = math.inf
    assert ctr[S.C_W_LABELED] == 2.5 and ctr[S.C_HO_W_SINCE] == 1.0 and ctr[S.C_DUMP] == math.inf
    assert SettingsView(np.zeros(S.N_PRM))._fields["lambda_"] == S.P_LAMBDA     # a keyword: trailing _


def test_extra_slots():
    st = np.zeros(S.N_ST + 4)
    v = StateView(st, extra={"gravity_extra": S.N_ST + 1})
    v.gravity_extra = 7.0
    assert st[S.N_ST + 1] == 7.0 and v.eta == st[S.S_ETA]
    assert isinstance(v, StateView) and type(v) is type(StateView(st, extra={"gravity_extra": S.N_ST + 1}))
    assert not hasattr(StateView(st), "gravity_extra")  # the extra names one view's class only
    assert StateView(st, extra={"t": S.S_T}).t == st[S.S_T]     # a name again, on its own slot: fine
    with pytest.raises(ValueError):
        StateView(st, extra={"t": S.S_T + 1})           # a name on another slot
    with pytest.raises(ValueError):
        StateView(st, extra={"_array": 1})
    back = pickle.loads(pickle.dumps(v))
    assert back.gravity_extra == 7.0 and back.eta == v.eta


def test_slots_of_a_module_or_dict():
    assert slots_of(S, "C_") == CounterView._fields
    assert slots_of({"S_GRAVITY_X": 40, "S_FLAG": True, "OTHER": 1}, "S_") == {"gravity_x": 40}


def test_run_state_exposes_its_arrays_by_name():
    cfg = train_config({"sources": ("-",), "bits": 4})
    rs = RunState.fresh(cfg)
    rs.counters.pass_ex = 5.0
    rs.state.eta = 0.25
    assert rs.ctr[S.C_PASS_EX] == 5.0 and rs.st[S.S_ETA] == 0.25
    assert rs.settings.power_t == rs.prm[S.P_POWER_T]
    assert rs.int_settings.train == 1
    rs.start_pass()
    assert rs.ctr[S.C_PASS_EX] == 0.0
    assert rs.quiet().counters.dump == math.inf
