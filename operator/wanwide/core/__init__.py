"""The provider-neutral core: what a Benchmark means and what every trial of it will do, decided once.

- ``api``: the resources as users write them (pydantic models: the CRDs' source), units.
- ``plan``: matrix expansion, regions and links, link classes, the fault timeline, services' settings,
  the runner's configuration; ``TrialPlan`` (pure).
- ``lifecycle``: how a trial lives, the one state machine both providers run: phases, timeouts,
  attempts and what a retry replays, the fault schedule and overlaps, the network check, run order
  and deployments, what each failure means (pure).
- ``contracts``: what crosses between the plan, the runner and the providers: the runner's and the
  probe's configuration, the results target, exit codes, the bundle and the lifecycle's event log.
- ``errors``, ``timestamps``: the error policy; time as text.

Nothing here does I/O.
"""
