"""Reports: what the commands' results look like to a reader. Each module turns one
command's :mod:`~cutlass_layout.model` result into text, tables, CSV or pictures; none
computes anything.

==================== =================================================================
:mod:`.common`       one table as terminal text or Markdown; the source's name for titles
:mod:`.layout`       ``layout``: the member table, the builder budget, the verdict; JSON, Markdown
:mod:`.sweep`        ``sweep``: the table sorted by verdict and headroom, CSV, Markdown, labels
:mod:`.diff`         ``diff``: structural changes by file, the numeric table, the audits'; Markdown
:mod:`.scan`         ``scan``: each storage struct as C++-like text, constants, diagnostics
:mod:`.plot`         memory maps of a SharedStorage and bar charts of a sweep (matplotlib)
:mod:`.audit`        ``audit``: one table per family (over capacity first), errors, counts; Markdown
==================== =================================================================

JSON objects are the results' own ``to_dict()`` (:mod:`cutlass_layout.model`).
"""
