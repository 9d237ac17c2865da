"""The environment registry: `rollouts.environment.name` in params.yaml names an environment by these keys.

External packages add environments through the `rewardmill.environments` entry-point group (name = key,
value = "module:Class"); built-ins win on a name clash. An entry point's class is checked against the `Environment`
Protocol (contract.py) when it is loaded; it subclasses nothing.
"""

from importlib.metadata import entry_points

from rewardmill.transforms.environments.contract import check_environment
from rewardmill.transforms.environments.feedback import FeedbackEnvironment
from rewardmill.transforms.environments.python_tool import PythonToolEnvironment
from rewardmill.transforms.errors import UserError

ENVIRONMENTS = {
    "feedback": FeedbackEnvironment,
    "python_tool": PythonToolEnvironment,
}
ENTRY_POINT_GROUP = "rewardmill.environments"


class UnknownEnvironment(UserError):
    """params name an environment that is neither built in nor installed."""


def get_environment_class(key: str):
    if key in ENVIRONMENTS:
        return ENVIRONMENTS[key]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == key:
            where = f"environment entry point {ep.name!r} ({ep.value}, group {ENTRY_POINT_GROUP})"
            return check_environment(ep.load(), where)
    known = sorted({*ENVIRONMENTS, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})
    raise UnknownEnvironment(f"unknown environment {key!r}; known: {known}")
