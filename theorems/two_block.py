"""T1, two-block universality in continuous depth.

Statement: for two attention blocks drawn from the Gaussian initialisation (generic blocks)
and admissible data there is a control (b_k, tau_k), k = 1..K, with
exp(tau_K F_(b_K)) o ... o exp(tau_1 F_(b_1)) (X) = Y.  Admissible (docs/conventions.md §3):
inputs X and targets Y in R^(N x n x d) with the same relations under the symmetry group of the
fields, the signed token permutations (F(g X) = g F(X) for (g X)_i = s x_(pi(i)), s = +-1):
the same coincident tokens in each sequence, the same sequences that are minus a permutation of
themselves (odd sequences such as {a, -a}), and the same pairs of sequences that are signed
permutations of each other, by the same signed permutation; for d = 1 the same order pattern;
the sequences of one repeated token related by one G with det G > 0.  (The first statement
asked only for distinct tokens and no permuted sequences; the suite found that the odd
symmetry X -> -X was missing from it: an odd input sequence stays odd, and a negated pair
stays negated, so such data were wrongly called admissible.)

What is checked (one instance per profile, all drawn from the seed):

1. Lie-bracket witness: the Hall brackets of F_0, F_1 span R^(N n d) on the inputs and on the
   targets (smallest degree reported), proved in Arb.  By the Chow-Rashevskii theorem this is
   what makes the flows controllable.
2. Control witness: the solver constructs a control for targets that are the image of the
   inputs under a hidden random control (admissible by construction; the hidden control is
   not given to the solver), replayed in float64 and again at 40 digits from the witness file.
   The solver's reach on independent Gaussian targets is measured separately (``make reach``).
3. Invariants: the rank on coincident tokens, permuted sequences, a negated pair and an odd
   sequence is proved equal to the invariants' bound, and inadmissible targets (coincident
   tokens, broken permutations, a broken odd sequence, d = 1 order reversal) are refused with
   the obstruction named.
4. Necessity (:mod:`theorems.necessity`): degenerate blocks lose the predicted rank.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from verify.model.blocks import gaussian_blocks
from verify.reporting.results import Check

from . import necessity
from .instances import collection, hidden_control_targets
from .witnesses import control_checks, rank_checks, refusal_check, solver_settings

NAME = "two_block"
TITLE = "Two-block universality (continuous depth)"
STATEMENT = ("For two Gaussian attention blocks and admissible data X, Y in R^(N x n x d) (the same relations under "
             "signed token permutations, see the hypotheses) there is a control (b_k, tau_k) whose flow "
             "exp(tau_K F_(b_K)) o ... o exp(tau_1 F_(b_1)) maps X onto Y.")
LATEX = (r"For $\theta_0,\theta_1$ drawn from the Gaussian initialisation and admissible $X,Y\in"
         r"(\mathbb{R}^{d})^{N\times n}$ there are $b_k\in\{0,1\}$ and $\tau_k\in\mathbb{R}$ with "
         r"$e^{\tau_K F_{\theta_{b_K}}}\circ\cdots\circ e^{\tau_1 F_{\theta_{b_1}}}(X)=Y$. "
         r"Admissible: $X$ and $Y$ have the same relations under the signed token permutations "
         r"$(gX)_i=s\,x_{\pi(i)}$, $s=\pm1$, with which every $F_\theta$ commutes ($F_\theta(gX)=gF_\theta(X)$): "
         r"the same coincident tokens, the same sequences with $X^a=gX^a$ for some $g$ with $s=-1$ "
         r"(such as $\{a,-a\}$), and the same pairs $X^a=gX^b$, with the same $g$; for $d=1$ the same order "
         r"pattern.")  # the odd symmetry was missing from the first statement; history: the module docstring, docs/
HYPOTHESES = [
    "blocks: Q, K, V with i.i.d. N(0, 1/d) entries (generic)",
    "inputs and targets: the same relations under signed token permutations x_i -> s x_(pi(i)), s = +-1 (the "
    "fields are odd and permutation equivariant): the same coincident tokens in each sequence, the same sequences "
    "equal to minus a permutation of themselves ({a, -a}, {a, -a, 0}, ...), the same pairs of sequences related by a "
    "signed permutation, by the same one (the odd symmetry was missing from the first statement; found by this suite)",
    "d = 1: the targets keep the order pattern of the inputs",
    "sequences of one repeated token (n = 1 included): targets y = G x for one G with det G > 0",
]

PROFILES = {
    "quick": dict(shape=(1, 2, 2), budget=120.0, starts=16, coincident=(1, 3, 2), necessity=(1, 2, 2)),
    "standard": dict(shape=(2, 2, 2), budget=300.0, starts=16, coincident=(2, 3, 2), necessity=(2, 2, 2), existence=True),
    "paper": dict(shape=(2, 3, 2), budget=1800.0, starts=32, coincident=(2, 3, 2), necessity=(2, 3, 2), existence=True),
}


def run(profile: str, seed: int, progress: Callable[[str], None] | None = None) -> list[Check]:
    p = PROFILES[profile]
    N, n, d = p["shape"]
    blocks = gaussian_blocks(seed, d)
    X = collection(seed, p["shape"], "inputs")
    m = X.size
    Y = hidden_control_targets(blocks, X, seed, "continuous", steps=2 * m)
    tag = f"N={N},n={n},d={d}"
    say = progress or (lambda s: None)
    say("T1: bracket witness on the inputs and targets")
    out = rank_checks(f"inputs {tag}", blocks, X) + rank_checks(f"targets {tag}", blocks, Y)
    say("T1: constructing a control")
    controls, _ = control_checks(tag, blocks, X, Y, "continuous",
                                 solver_settings("continuous", seed, p), progress, existence=p.get("existence", False))
    out += controls
    say("T1: invariant sets")
    Xc = collection(seed, p["coincident"], "coincident")
    Xc[0, -1] = Xc[0, 0]
    out += rank_checks(f"coincident tokens {p['coincident']}", blocks, Xc)
    Xp = np.concatenate([X, X[:1, ::-1]], axis=0)
    out += rank_checks(f"permuted sequences {Xp.shape}", blocks, Xp)
    Xn = np.concatenate([X, -X[:1]], axis=0)
    out += rank_checks(f"negated pair, sequence {N + 1} = -sequence 1 {Xn.shape}", blocks, Xn)
    Xo = collection(seed, (N, 2, d), "odd")
    Xo[0, 1] = -Xo[0, 0]
    out += rank_checks(f"odd sequence {{a, -a}} {Xo.shape}", blocks, Xo)
    Yc = Y.copy()
    Yc[0, 1] = Yc[0, 0]
    out.append(refusal_check(tag, X, Yc, False, "coincident tokens in the targets only"))
    out.append(refusal_check(f"{Xp.shape}", Xp, collection(seed, Xp.shape, "generic targets"), False,
                             "permuted sequences broken"))
    out.append(refusal_check(f"{Xo.shape}", Xo, collection(seed, Xo.shape, "generic odd targets"), False,
                             "odd sequence broken"))
    out.append(refusal_check(f"{Xn.shape}", Xn, collection(seed, Xn.shape, "generic negated targets"), False,
                             "negated pair broken"))
    X1 = np.sort(collection(seed, (1, 2, 1), "d=1"), axis=1)
    out.append(refusal_check("N=1,n=2,d=1", X1, X1[:, ::-1].copy(), False, "d = 1 order reversed"))
    say("T1: necessity of the hypotheses")
    out += necessity.run(seed, p["necessity"])
    return out
