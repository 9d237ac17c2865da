"""The labeler registry: params.yaml names labelers by these keys.

External packages add labelers through the `rewardmill.labelers` entry-point group (name = key,
value = "module:Class"); built-ins win on a name clash. An entry point's class is checked against the `Labeler`
Protocol (contract.py) when it is loaded; it subclasses nothing.
"""

from importlib.metadata import entry_points

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.labelers.code_tests import CodeTestsVerifier
from rewardmill.transforms.labelers.contract import check_labeler, find_plugin
from rewardmill.transforms.labelers.environment import EnvironmentRewardVerifier
from rewardmill.transforms.labelers.format import FormatVerifier
from rewardmill.transforms.labelers.instruction_following import InstructionFollowingVerifier
from rewardmill.transforms.labelers.length import LengthPenaltyVerifier
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from rewardmill.transforms.labelers.pairwise_judge import PairwiseJudge
from rewardmill.transforms.labelers.panel_judge import PanelJudge
from rewardmill.transforms.labelers.pointwise_judge import PointwiseJudge
from rewardmill.transforms.labelers.reasoning_gym import ReasoningGymVerifier
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge
from rewardmill.transforms.labelers.reference_similarity import ReferenceSimilarityVerifier
from rewardmill.transforms.labelers.reward_model import RewardModelScorer
from rewardmill.transforms.labelers.rubric_judge import RubricJudge
from rewardmill.transforms.labelers.rule_checker import RuleChecker
from rewardmill.transforms.labelers.self_consistency import SelfConsistencyVerifier
from rewardmill.transforms.labelers.tiered import TieredVerifier
from rewardmill.transforms.labelers.trajectory_judge import TrajectoryJudge
from rewardmill.transforms.labelers.turns import TurnLabelsVerifier
from rewardmill.transforms.labelers.verifiers import VerifiersRubricVerifier

# `rewardmill new-labeler NAME` adds its import above and its entry below.
LABELERS = {
    "code_tests": CodeTestsVerifier,
    "environment": EnvironmentRewardVerifier,
    "format": FormatVerifier,
    "instruction_following": InstructionFollowingVerifier,
    "length": LengthPenaltyVerifier,
    "math_answer": MathAnswerVerifier,
    "pairwise_judge": PairwiseJudge,
    "panel_judge": PanelJudge,
    "pointwise_judge": PointwiseJudge,
    "reasoning_gym": ReasoningGymVerifier,
    "reference_judge": ReferenceJudge,
    "reference_similarity": ReferenceSimilarityVerifier,
    "reward_model": RewardModelScorer,
    "rubric_judge": RubricJudge,
    "rule_checker": RuleChecker,
    "self_consistency": SelfConsistencyVerifier,
    "tiered": TieredVerifier,
    "trajectory_judge": TrajectoryJudge,
    "turns": TurnLabelsVerifier,
    "verifiers": VerifiersRubricVerifier,
}

ENTRY_POINT_GROUP = "rewardmill.labelers"


class UnknownLabeler(UserError, KeyError):
    """params name a labeler that neither LABELERS nor an installed entry point provides."""

    def __str__(self) -> str:  # KeyError's own str() quotes the message
        return str(self.args[0])


def get_labeler_class(key: str):
    installed = lambda: entry_points(group=ENTRY_POINT_GROUP)  # noqa: E731 (looked up here: tests replace it)
    return find_plugin(key, LABELERS, ENTRY_POINT_GROUP, installed, check_labeler, "labeler", UnknownLabeler)
