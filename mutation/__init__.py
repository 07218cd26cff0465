"""Mutation testing of the engine's decision modules: ``./dev mutate`` (``python -m mutation``).

Which modules are mutated, which tests each one's mutants run, and the survival threshold are in
:mod:`mutation.__main__`; the reviewed equivalent mutants in :mod:`mutation.equivalent`.
"""
