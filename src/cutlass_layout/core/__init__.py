"""The bottom services, importing nothing of the package but :mod:`cutlass_layout.errors`:
the user cache and its one key (:mod:`.cache`), what a user names and how it is read within
limits (:mod:`.files`), the one process pool (:mod:`.pool`), progress on stderr
(:mod:`.progress`) and a Dask cluster as the pool's executor (:mod:`.dask`)."""
