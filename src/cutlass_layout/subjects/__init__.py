"""What is laid out, as text and values: a config (:mod:`.config`, its arch :mod:`.archs`, grids
of them :mod:`.grid`), its probe block or a user type (:mod:`.probe`), launchers cut down to
their kernel type (:mod:`.launchers`), and what a storage of no GEMM shape or a 2.x mainloop
holds (:mod:`.shapes`, :mod:`.mainloop2x`). Nothing here parses or caches."""
