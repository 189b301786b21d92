"""The resources as users write them: Topology, Benchmark, Trial (pydantic models, the CRDs' single source), units."""
