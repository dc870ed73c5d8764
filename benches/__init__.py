"""The Python benchmarks of rust-bertscore, run as modules from the repository root
(``python -m benches.end_to_end``; the Makefile's ``bench-*`` targets do so).

Shared helpers live in :mod:`benches.common`; :mod:`benches.shapes` writes random-weight
checkpoints of large published shapes; :mod:`benches.smooth` is SmoothQuant, used only by
:mod:`benches.int8_levers`. ``bert_score_run.py`` runs by path in a separate interpreter (the
bench venv with torch and bert-score). The criterion suites are ``kernel.rs`` and ``stats.rs``
(``cargo bench``).
"""
