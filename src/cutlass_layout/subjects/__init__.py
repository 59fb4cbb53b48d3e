"""What is laid out, as text and values: a config (:mod:`.config`, its arch :mod:`.archs`, grids
of them :mod:`.grid`), a user's own type (:mod:`.user_type`), the probe that lays them out
(:mod:`.probe`; a subject's detection helpers and aliases :mod:`.aliases`, a config's type chain
:mod:`.builders`, the builder's stage budget :mod:`.budgets`), and what a storage of no GEMM
shape or a 2.x mainloop holds (:mod:`.shapes`, :mod:`.mainloop2x`). Nothing here parses or
caches."""
