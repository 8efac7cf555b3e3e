"""The admissibility matrix: admissible pairs pass, each kind of inadmissible pair is refused.

One Hypothesis strategy draws admissible (inputs, targets) pairs, full or causal; one strategy
per obstruction of docs/conventions.md §3 breaks such a pair in exactly that way.  The property is that
:func:`verify.lie.admissibility.check_admissible` accepts the first and refuses each of the others
with a one-line message naming that obstruction, and that ``verify interpolate`` turns the
refusal into exit code 2 without a traceback.  Solver witnesses for drawn admissible
hidden-control targets must replay under the independent implementation.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from theorems.instances import collection, hidden_control_targets
from verify.io import witness
from verify.io.errors import InputError
from verify.lie.admissibility import check_admissible
from verify.model.blocks import gaussian_blocks
from verify.search.settings import Settings
from verify.search.solver import solve
from verify.verdicts import replay

from . import independent
from .test_cli import run, save_npy

seeds = st.integers(0, 2**31 - 1)


def _gl_plus(g: np.random.Generator, d: int) -> np.ndarray:
    """A random G with det G = exp(trace A) > 0."""
    return scipy.linalg.expm(0.5 * g.normal(size=(d, d)))


@st.composite
def admissible(draw, causal: bool = False, min_N: int = 1, min_n: int = 1, d: int | None = None):
    """(X, Y): tokens i.i.d. N(0, 1) at least 0.3 apart, no permuted sequences; d = 1 full: both
    sorted; causal, or full with n = 1: first tokens y_1 = G x_1 with det G > 0 and, causal with
    d = 1, the first two tokens of every target sequence in the inputs' order."""
    seed = draw(seeds)
    N, n = draw(st.integers(min_N, max(min_N, 3))), draw(st.integers(min_n, 3))
    d = draw(st.integers(1, 3)) if d is None else d
    X, Y = collection(seed, (N, n, d), "X"), collection(seed, (N, n, d), "Y")
    if causal or n == 1:  # the first token (under full attention: a lone one) moves linearly
        Y[:, 0] = X[:, 0] @ _gl_plus(np.random.default_rng(seed), d).T
        if d == 1 and n >= 2:
            flip = np.sign(X[:, 1, 0] - X[:, 0, 0]) != np.sign(Y[:, 1, 0] - Y[:, 0, 0])
            Y[flip, 1, 0] = 2 * Y[flip, 0, 0] - Y[flip, 1, 0]  # mirror token 2 about token 1
    elif d == 1:
        X.sort(axis=1), Y.sort(axis=1)
    return X, Y


def _pick(draw, n: int, k: int = 2) -> list[int]:
    return draw(st.permutations(range(n)))[:k]


@st.composite
def coincident(draw, where: str):
    X, Y = draw(admissible(min_n=2))
    s = draw(st.integers(0, X.shape[0] - 1))
    i, j = _pick(draw, X.shape[1])
    A = Y if where == "targets" else X
    A[s, j] = A[s, i]
    return X, Y, False, f"coincide in the {where} only"


@st.composite
def permuted(draw, same_in_inputs: bool):
    """Sequence t a token permutation of sequence s in the targets only, or in both but by
    different permutations."""
    X, Y = draw(admissible(min_N=2, min_n=2))
    s, t = _pick(draw, X.shape[0])
    p = draw(st.permutations(range(X.shape[1])).filter(lambda p: p != sorted(p)))
    Y[t] = Y[s][p]
    if same_in_inputs:
        X[t] = X[s]  # the identity permutation in the inputs, p in the targets
    return X, Y, False, "token permutations"


@st.composite
def order_reversed(draw, causal: bool):
    X, Y = draw(admissible(causal=causal, min_n=2, d=1))
    s = draw(st.integers(0, X.shape[0] - 1))
    if causal:  # mirror token 2 about token 1, which G keeps in place
        Y[s, 1] = 2 * Y[s, 0] - Y[s, 1]
    else:
        i, j = _pick(draw, X.shape[1])
        Y[s, [i, j]] = Y[s, [j, i]]
    return X, Y, causal, "change order"


@st.composite
def negative_det(draw):
    d = draw(st.integers(1, 3))
    X, Y = draw(admissible(causal=True, min_N=d, d=d))
    G = _gl_plus(np.random.default_rng(draw(seeds)), d) @ np.diag([-1.0] + [1.0] * (d - 1))
    Y[:, 0] = X[:, 0] @ G.T
    return X, Y, True, "det G"


@st.composite
def no_common_G(draw):
    d = draw(st.integers(1, 3))
    X, Y = draw(admissible(causal=True, min_N=d + 1, d=d))
    Y[draw(st.integers(0, X.shape[0] - 1)), 0] += draw(st.floats(0.1, 2.0))
    return X, Y, True, "not one linear map G"


@st.composite
def lone_tokens_without_common_G(draw):
    """Full attention, n = 1: the lone tokens move by one G; one target token moved off it."""
    d = draw(st.integers(1, 3))
    X, Y = draw(admissible(min_N=d + 1, min_n=1, d=d).filter(lambda XY: XY[0].shape[1] == 1))
    Y[draw(st.integers(0, X.shape[0] - 1)), 0] += draw(st.floats(0.1, 2.0))
    return X, Y, False, "not one linear map G"


@st.composite
def broken_prefix(draw):
    """Sequences s, t share their first token (inputs and targets) and their second in the targets only."""
    X, Y = draw(admissible(causal=True, min_N=2, min_n=2))
    s, t = _pick(draw, X.shape[0])
    X[t, 0], Y[t, 0], Y[t, 1] = X[s, 0], Y[s, 0], Y[s, 1]
    return X, Y, True, "share their first 2 tokens in the targets only"


INADMISSIBLE = st.one_of(coincident("targets"), coincident("inputs"), permuted(False), permuted(True),
                         order_reversed(False), order_reversed(True), negative_det(), no_common_G(),
                         lone_tokens_without_common_G(), broken_prefix())


@given(st.booleans().flatmap(lambda c: st.tuples(st.just(c), admissible(causal=c))))
def test_admissible_pairs_are_accepted(case):
    causal, (X, Y) = case
    check_admissible(X, Y, causal)


@given(INADMISSIBLE)
def test_each_obstruction_is_refused_by_name(case):
    X, Y, causal, message = case
    with pytest.raises(InputError, match=message) as e:
        check_admissible(X, Y, causal)
    assert "\n" not in str(e.value)


FLOWS_ONLY = ("det G", "change order")  # invariants of flows that networks break (check_admissible)


@given(INADMISSIBLE)
def test_finite_depth_refuses_all_but_the_invariants_of_flows(case):
    X, Y, causal, message = case
    if message in FLOWS_ONLY:
        check_admissible(X, Y, causal, "finite")
    else:
        with pytest.raises(InputError, match=message):
            check_admissible(X, Y, causal, "finite")


@settings(max_examples=examples(5, "each example runs the CLI or the solver (seconds)"), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(INADMISSIBLE)
def test_interpolate_refuses_with_exit_2(tmp_path, case):
    X, Y, causal, message = case
    args = ["interpolate", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--targets",
            str(save_npy(tmp_path, "y.npy", Y)), "--seed", "0", "--quiet"]
    r = run(*args, *(["--causal"] if causal else []))
    assert r.returncode == 2 and message.split()[0] in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@settings(max_examples=examples(5, "each example runs the CLI or the solver (seconds)"), deadline=None)
@given(seeds, st.sampled_from([(1, 2, 2), (2, 2, 1), (1, 3, 1)]))
def test_solver_witnesses_for_hidden_control_targets_replay_independently(seed, shape):
    """Every witness the solver returns passes the suite's replay and the independent
    implementation's.  Whether it finds one is reach, measured elsewhere, not a property, so
    unsolved draws are discarded (Hypothesis fails the test if too few are solved).  The
    thorough profile once found seed 0, shape (2, 2, 1) unsolved within 60 s (best 5.4e-6);
    the short finite-depth networks of ``DEPTH_DEFAULTS`` solve it in about 5 s."""
    blocks = gaussian_blocks(seed, shape[2])
    X = collection(seed, shape, "inputs")
    Y = hidden_control_targets(blocks, X, seed, "finite", 2 * X.size)
    sol = solve(blocks, X, Y, Settings(depth="finite", seed=seed, time_budget=20))
    assume(sol.success)
    doc = witness.make(blocks, X, Y, "finite", sol.steps, 1e-10)
    assert replay.replay(witness.parse(json.dumps(doc)))["passed"]
    theirs = independent.network([(b.Q, b.K, b.V) for b in blocks], sol.steps, X)
    assert np.abs(theirs - Y).max() <= 1e-10 + 1e-13 * len(sol.steps)
