"""The environment registry: `rollouts.environment.name` in params.yaml names an environment by these keys.

External packages add environments through the `rewardmill.environments` entry-point group (name = key,
value = "module:Class"); built-ins win on a name clash. An entry point's class is checked against the `Environment`
Protocol (contract.py) when it is loaded; it subclasses nothing.
"""

from importlib.metadata import entry_points

from rewardmill.transforms.environments.contract import check_environment
from rewardmill.transforms.environments.feedback import FeedbackEnvironment
from rewardmill.transforms.environments.python_tool import PythonToolEnvironment
from rewardmill.transforms.environments.verifiers import VerifiersEnvironment
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.labelers.contract import find_plugin

# `rewardmill new-environment NAME` adds its import above and its entry below.
ENVIRONMENTS = {
    "feedback": FeedbackEnvironment,
    "python_tool": PythonToolEnvironment,
    "verifiers": VerifiersEnvironment,
}
ENTRY_POINT_GROUP = "rewardmill.environments"


class UnknownEnvironment(UserError):
    """params name an environment that is neither built in nor installed."""


def get_environment_class(key: str):
    installed = lambda: entry_points(group=ENTRY_POINT_GROUP)  # noqa: E731
    return find_plugin(
        key, ENVIRONMENTS, ENTRY_POINT_GROUP, installed, check_environment, "environment", UnknownEnvironment
    )
