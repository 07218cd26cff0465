"""Engine benchmarks: ``python -m benchmarks [bootstrap|retrieval|gate] [--quick]``.

Every figure is measured in the same run, side by side with what it is compared to, and reported
as a ratio: the machine this runs on is shared and noisy, so absolute times move between runs
while ratios measured together move much less. Nothing here asserts a time; each target prints a
PASS or MISS line with the figures behind it.

The sections:

* ``bootstrap``: :func:`evalcore.engine.paired_bootstrap` against the spec's pure-Python loop and
  ``scipy.stats.bootstrap``, with peak memory.
* ``retrieval``: :func:`evalcore.engine.score_retrieval` against the spec's four functions,
  pytrec_eval and ranx, from per-question Python lists of string ids.
* ``gate``: :func:`evalcore.engine.gate_frame` over ten RAG metrics and twenty slices.
* ``labelling``: the labelling endpoints over real HTTP (see :mod:`benchmarks.labelling`, which
  takes options of its own: ``python -m benchmarks labelling --help``).
"""
