"""A real labeler made slow, for the kill-and-resume test: it logs every computation to $CALLS_FILE."""

import os
import time

from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier


class SlowMathAnswer(MathAnswerVerifier):
    label_many = None  # one row at a time, through the logging label() below

    def label(self, completion, reference):
        with open(os.environ["CALLS_FILE"], "a") as fh:
            fh.write(completion + "\n")
        time.sleep(float(os.environ.get("SLOW_SECONDS", "0.3")))
        return super().label(completion, reference)
