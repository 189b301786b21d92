"""How a trial lives, decided once for both providers; pure: plan + state + what was seen in, decisions out.

- ``step``: the words between the lifecycle and a provider (``Seen``, ``Progress``, the actions, ``Step``);
- ``machine``: ``decide``, the one state machine (phases, timeouts, attempts, what each failure means);
- ``state``: the trial's state and ``apply``, the one reducer: the only place a phase changes;
- ``deploy``: the deployment as a plan of stages the lifecycle steps through;
- ``schedule``: the fault schedule and the WAN in force at each instant;
- ``network``: which pairs are measured, and the verdict on what they measure;
- ``order``: the run order, and which trials share a deployment;
- ``objectives``: the service level objectives the bundles recorded, said for the status.
"""

from wanwide.core.lifecycle.deploy import *  # noqa: F403
from wanwide.core.lifecycle.machine import *  # noqa: F403
from wanwide.core.lifecycle.network import *  # noqa: F403
from wanwide.core.lifecycle.objectives import *  # noqa: F403
from wanwide.core.lifecycle.order import *  # noqa: F403
from wanwide.core.lifecycle.schedule import *  # noqa: F403
from wanwide.core.lifecycle.state import *  # noqa: F403
from wanwide.core.lifecycle.step import *  # noqa: F403
