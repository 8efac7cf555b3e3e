"""The linear algebra of finite-depth multiple shooting at scale, with named baselines in the
same run (``make bench``; issue 39).

The solver's default layout in finite depth: 6 m layers in segments of 6 (so S = m segments),
on the reach instances (``theorems.reach.instance``, shapes (4, 4, 2), (8, 4, 2), (16, 4, 2)).

* one Levenberg-Marquardt step of a population of 8 members (the block elimination of
  ``shooting_solver``, whose products with the segments' state Jacobians D_s use their block
  diagonal: m^2 n d a product) vs the same elimination with D_s as dense m x m matrices
  (baseline: the solver until 2026-12-03, m^3 a product);
* one chord step of the finish on one member (``Shooting.pseudo_inverse``: the same
  elimination) vs ``lstsq`` on the assembled Jacobian (baseline, m = 32 and 64 only: at m = 64
  it is 4096 x 4416 and takes tens of seconds).
"""

from __future__ import annotations

import numpy as np
import pytest

from theorems.reach import instance
from verify.search.newton import solve_or_nan
from verify.search.shooting import Shooting, shooting_solver

SIZES = (32, 64, 128)
MEMBERS = 8


def system(m: int, members: int = MEMBERS):
    X, Y, blocks = instance(m, 0, seed=39)
    shoot = Shooting(blocks, X, Y, segments=m, steps=6)
    x = np.array([shoot.fresh(np.random.default_rng([39, k]), 0.5, "images" if k % 2 else "path")
                  for k in range(members)])
    r, parts = shoot.parts(x, sensitivities=True)
    return shoot, x, r, parts


def dense_products_solver(parts, lam):
    """The elimination of ``shooting_solver`` with D_s stored and multiplied as dense m x m
    matrices (the baseline)."""
    H, D = parts
    P, S, m, L = H.shape
    N, nd = D.shape[2], D.shape[3]
    Dm = np.zeros((P, S, m, m))
    for q in range(N):
        Dm[:, :, q * nd:(q + 1) * nd, q * nd:(q + 1) * nd] = D[:, :, q]
    Dm[:, 0] = 0.0
    unknowns = S * L + (S - 1) * m
    scale = (np.sum(H * H, axis=(1, 2, 3)) + np.sum(Dm * Dm, axis=(1, 2, 3)) + (S - 1) * m) / unknowns
    mu = np.asarray(lam * scale)[:, None]
    eye = np.eye(m)
    A = H @ np.swapaxes(H, -1, -2) + Dm @ np.swapaxes(Dm, -1, -2)
    A[:, : S - 1] += eye
    A[..., np.arange(m), np.arange(m)] += mu[:, None, :]
    inv, Z = [None] * S, [None] * S
    C = A[:, 0]
    for s in range(1, S):
        inv[s - 1] = solve_or_nan(C, np.broadcast_to(eye, C.shape))
        Z[s] = inv[s - 1] @ np.swapaxes(Dm[:, s], -1, -2)
        C = A[:, s] - Dm[:, s] @ Z[s]
    inv[S - 1] = solve_or_nan(C, np.broadcast_to(eye, C.shape))

    def step(r):
        b = -r.reshape(P, S, m, 1)
        z, rhs = [None] * S, b[:, 0]
        for s in range(1, S):
            z[s] = inv[s - 1] @ rhs
            rhs = b[:, s] + Dm[:, s] @ z[s]
        y = np.empty((P, S, m, 1))
        y[:, S - 1] = inv[S - 1] @ rhs
        for s in range(S - 2, -1, -1):
            y[:, s] = z[s + 1] + Z[s + 1] @ y[:, s + 1]
        dh = np.swapaxes(H, -1, -2) @ y
        dW = -y[:, :-1] + np.swapaxes(Dm[:, 1:], -1, -2) @ y[:, 1:]
        return np.concatenate([dh.reshape(P, S * L), dW.reshape(P, (S - 1) * m)], axis=1)

    return step


@pytest.mark.parametrize("m", SIZES)
def test_lm_step_block_products(benchmark, m):
    _, _, r, parts = system(m)
    lam = np.full(MEMBERS, 1e-3)
    benchmark.group = f"LM step of {MEMBERS} members, finite depth, m = {m}"
    step = benchmark(lambda: shooting_solver(parts, lam)(r))
    assert np.allclose(step, dense_products_solver(parts, lam)(r), rtol=1e-8, atol=1e-10 * np.abs(step).max())


@pytest.mark.parametrize("m", SIZES)
def test_lm_step_baseline_dense_products(benchmark, m):
    _, _, r, parts = system(m)
    benchmark.group = f"LM step of {MEMBERS} members, finite depth, m = {m}"
    benchmark(lambda: dense_products_solver(parts, np.full(MEMBERS, 1e-3))(r))


@pytest.mark.parametrize("m", SIZES)
def test_chord_step_pseudo_inverse(benchmark, m):
    shoot, x, r, _ = system(m, 1)
    benchmark.group = f"chord step of one member, finite depth, m = {m}"
    benchmark.pedantic(lambda: shoot.pseudo_inverse(x[0])(-r[0]), rounds=3)


@pytest.mark.parametrize("m", SIZES[:2])
def test_chord_step_baseline_dense_lstsq(benchmark, m):
    shoot, x, r, parts = system(m, 1)
    benchmark.group = f"chord step of one member, finite depth, m = {m}"
    benchmark.pedantic(lambda: np.linalg.lstsq(shoot.system(x, True)[1][0], -r[0], rcond=1e-13)[0], rounds=1)
