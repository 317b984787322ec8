"""Compiled plans read their literal constants as constants, and only those:
a name the function binds, or a value that is not a plain literal, is read
as it would be without folding."""

import rubriclang
from rubriclang.interp.plan import _define

GRAPH = rubriclang.loads(
    """rubric g { version = 1 }
contract { scale = score[1, 5] }
criterion c: ordinal[1, 5] = human.annotation { key = "c" }
sink c
readout pointwise { output = ordinal[1, 5] }
"""
).graph


def define(body: list[str], ns: dict, args: str = "a"):
    return _define(GRAPH, "f", args, body, ns)


def test_a_literal_constant_is_compiled_in_and_keeps_its_type():
    for value in (3, 2.5, "pointwise", True, False, None):
        f = define(["    return k"], {"k": value})
        assert "k" not in f.__code__.co_names
        assert f(0) is value or (f(0) == value and type(f(0)) is type(value))


def test_a_name_the_function_binds_is_not_folded():
    f = define(["    k = a", "    return k + 1"], {"k": 100})
    assert f(1) == 2
    g = define(["    if (k := a) > 0:", "        return k", "    return -1"], {"k": 100})
    assert g(5) == 5
    h = define(["    return k"], {"k": 100}, args="k")
    assert h(7) == 7


def test_a_value_that_is_not_a_plain_literal_is_read_from_the_namespace():
    table = [1, 2]
    f = define(["    return k"], {"k": table})
    assert f(0) is table
    assert "k" in f.__code__.co_names


def test_the_source_kept_names_the_constants():
    f = define(["    return a + k"], {"k": 3})
    assert f(1) == 4
    assert "a + k" in f.source


def test_functions_of_one_source_and_literals_share_their_code_and_no_others_do():
    import math

    a = define(["    return k"], {"k": 3})
    b = define(["    return k"], {"k": 3})
    assert a.__code__ is b.__code__
    zero, negative_zero = define(["    return k"], {"k": 0.0}), define(["    return k"], {"k": -0.0})
    assert math.copysign(1, zero(0)) == 1 and math.copysign(1, negative_zero(0)) == -1
    one, true = define(["    return k"], {"k": 1}), define(["    return k"], {"k": True})
    assert type(one(0)) is int and true(0) is True
    table = [1]
    read = define(["    return k"], {"k": table})
    assert read(0) is table and define(["    return k"], {"k": 3})(0) == 3
