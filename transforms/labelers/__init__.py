"""The labeler registry: params.yaml names labelers by these keys.

External packages add labelers through the `rewardmill.labelers` entry-point group (name = key,
value = "module:Class"); built-ins win on a name clash.
"""

from importlib.metadata import entry_points

from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier

# `rewardmill new-labeler NAME` adds its import above and its entry below.
LABELERS = {
    "math_answer": MathAnswerVerifier,
}

ENTRY_POINT_GROUP = "rewardmill.labelers"


def get_labeler_class(key: str):
    if key in LABELERS:
        return LABELERS[key]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == key:
            return ep.load()
    known = sorted({*LABELERS, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})
    raise KeyError(f"unknown labeler {key!r}; known: {known}")
