"""The one engine and its scheduler: :mod:`.engine` (a batch of subjects in, their
``LayoutReport`` out: batching, errors tied to subjects, splits and retries, the store),
:mod:`.cache` (the user cache and its one key), :mod:`.runner` (the one process pool and
progress) and :mod:`.executors` (where the pool runs: forked here, or a Dask cluster).
``cache``, ``runner`` and ``executors`` import only the errors; every layer may use them."""
