"""The commands' logic: one module per question (:mod:`.sweep`, :mod:`.diff`, :mod:`.scan`,
:mod:`.audit`), each returning a dataclass of :mod:`cutlass_layout.model`.

Python users call them through the facade (``cutlass_layout.sweep(...)``, the functions of
:mod:`cutlass_layout.api`); a module's other names are imported from here
(``from cutlass_layout.commands.sweep import MAX_STAGES``).
"""
