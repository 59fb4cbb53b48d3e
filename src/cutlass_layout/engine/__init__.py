"""The one engine: :mod:`.loop` (a batch of subjects in, their ``LayoutReport`` out: batching,
errors tied to subjects, splits and retries, the layouts cache), :mod:`.numbers` (one report
read from a parsed probe: structs, stages, capacity, launch size, TMA bytes, builder budget)
and :mod:`.schedule` (the one scheduler: every command's tasks on the one pool, with progress,
results by tag and follow-ups). It builds on the bottom services of :mod:`cutlass_layout.core`
(cache, pool, progress)."""
