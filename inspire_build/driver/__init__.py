"""One build, in order, whoever runs it: ``pipeline.build_split`` in this process, and the
``build-split`` Prefect flow (flows/build_split.py), which passes its :class:`Hooks`.

Select the split's targets (``steps.py``), then walk them round by round
(:class:`instances.Walk`). A round resolves its targets' lineage chunk by chunk
(``steps.lineage_chunks``: a chunk's references are fetched in shared batches); as each chunk is
written, its candidates' LLM steps start in the build's pool (:class:`gold.Steps`) and the next
chunk is fetched beside them (``rounds.py``). With ``runner = "dask"`` every chunk is resolved
on the Dask workers at once, from a read-only copy of the warehouse, and then every chunk's LLM
steps run there too, from a second copy made once lineage is complete. Either way the calling
thread alone writes: each chunk's responses and lineage in the chunks' order, each target's
records as soon as it and every target before it have ended, the version last; so the version
is the same at any concurrency and on any runner. A build is recorded in ``build_runs``
(``build.py``), its failure too, through a fresh connection where a failed write left DuckDB's
unusable. :class:`Hooks` is how a caller wraps and watches it all (``hooks.py``).

A rerun with the same config is answered from the raw response store and the LLM call log, so
it makes no HTTP or LLM call, and rewrites the same version.
"""

from inspire_build.driver.build import build, recorded, reviewed, run, summary
from inspire_build.driver.hooks import Hooks, Workers

__all__ = ["Hooks", "Workers", "build", "recorded", "reviewed", "run", "summary"]
