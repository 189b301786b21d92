"""The two providers: each translates the plan and the lifecycle's actions, and decides nothing.

- ``kubernetes``: the kopf operator (render → apply, observe → the lifecycle → act).
- ``lab``: one machine, regions as network namespaces, real services and processes.
"""
