"""The one engine: :mod:`.loop` (a batch of subjects in, their ``LayoutReport`` out: batching,
errors tied to subjects, splits and retries, the layouts cache). It builds on the bottom
services of :mod:`cutlass_layout.core` (cache, pool, progress)."""
