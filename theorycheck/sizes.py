"""One vocabulary for the names of problem sizes.

The sizes a claim or a shared run declares (``sizes={"quick": {...}, "full": {...}}``, read as
``tc.sizes[name]`` / ``run.sizes[name]``) name the same few concepts across papers.  Each
concept has one canonical name, listed in :data:`VOCABULARY` with its meaning and the synonyms
it replaces; declaring a size under a synonym is a :class:`~theorycheck.errors.DeclarationError`
naming the canonical word.

Conventions around the vocabulary:

* a grid of values of one size is its plural (``ns``, ``etas``, ``widths``, ``dims``) and the
  axis of a map is ``<name>_map`` (``n_map``, ``width_map``);
* a second count of the same concept is a qualified name (``small_step_instances``,
  ``comparison_instances``, ``path_draws``);
* a paper's own notation that is not one of these concepts stays as the paper writes it
  (``s0``, ``dq``, ``d_in``, anon20's word dimension ``t``): single letters are never rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .errors import DeclarationError

__all__ = ["SizeName", "VOCABULARY", "SYNONYMS", "synonym_problems", "check_size_names"]


@dataclass(frozen=True)
class SizeName:
    """A canonical size name, what it counts, and the names it replaces."""

    name: str
    meaning: str
    synonyms: tuple[str, ...]


VOCABULARY: tuple[SizeName, ...] = (
    SizeName("instances", "independent random repetitions (problems, data sets, initializations) "
             "a statistic or a rate is taken over", ("trials", "seeds", "reps", "repetitions",
                                                       "repeats", "runs", "inits")),
    SizeName("draws", "Monte Carlo draws averaged into one estimate of an expectation or a "
             "probability", ("samples", "paths", "mc_samples", "monte_carlo")),
    SizeName("steps", "optimizer steps (iterations) of one run", ("iterations", "iters",
                                                                  "n_steps", "num_steps")),
    SizeName("n", "training samples in one data set", ("n_train", "train", "n_samples",
                                                        "num_samples")),
    SizeName("n_test", "held-out samples a trained predictor is evaluated on",
             ("test", "test_points", "test_samples", "n_eval")),
    SizeName("T", "tokens per sequence", ("tokens", "seq_len", "sequence_length")),
    SizeName("d", "the dimension of the inputs (or of the parameter, as the paper writes it)",
             ("dim", "dimension")),
    SizeName("width", "hidden units of a network layer", ("hidden", "hidden_width", "neurons")),
    SizeName("eta", "a constant step size (a grid of them: etas)",
             ("lr", "learning_rate", "step_size", "stepsize", "step_sizes", "lrs")),
    SizeName("batch", "minibatch size", ("batch_size",)),
    SizeName("examples", "cases a property search draws (hypothesis's max_examples)",
             ("max_examples",)),
)

#: synonym -> its canonical name (``samples`` also names ``n``: see :func:`synonym_problems`)
SYNONYMS: dict[str, str] = {s: entry.name for entry in VOCABULARY for s in entry.synonyms}

_AMBIGUOUS = {"samples": "'draws' (Monte Carlo draws) or 'n' (training samples)"}


def synonym_problems(names) -> list[str]:
    """One sentence per name in ``names`` that is a known synonym, naming the canonical word."""
    problems = []
    for name in sorted(set(names)):
        if name in SYNONYMS:
            canonical = _AMBIGUOUS.get(name, repr(SYNONYMS[name]))
            problems.append(f"size {name!r} is a synonym: use {canonical}")
    return problems


def check_size_names(sizes: Mapping[str, Mapping[str, object]], where: str) -> None:
    """Raise DeclarationError when a tier of ``sizes`` names a size by a synonym."""
    problems = synonym_problems(name for tier in sizes.values() for name in tier)
    if problems:
        raise DeclarationError(f"{where}: " + "; ".join(problems)
                               + " (the vocabulary: theorycheck.sizes.VOCABULARY, "
                               "docs/writing-claims.md)")
