"""ReferenceSimilarityVerifier: how close is the completion to the reference text? (BLEU or ROUGE-L).

BLEU against a good reference is a strong reward for instruction following (BLEUBERI), and needs no judge.
"""

from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label

METRICS = ("bleu", "rougeL")
# sacrebleu tokenizers that need nothing else: spm/flores* download a model, ja-/ko-mecab need extra packages.
BLEU_TOKENIZERS = ("13a", "intl", "char", "zh", "none")


@dataclass(frozen=True)
class ReferenceSimilarityConfig:
    metric: str = "bleu"  # bleu: sacrebleu sentence BLEU / 100 | rougeL: rouge-score ROUGE-L F1; also the aspect
    threshold: float = 0.5  # verdict correct when score >= threshold; pairing uses the score itself
    bleu_tokenize: str = "13a"  # sacrebleu tokenizer: 13a (WMT default), intl, char, zh or none
    rouge_use_stemmer: bool = True  # Porter stemming (no downloaded data); rouge-score sees only [a-z0-9] tokens

    def __post_init__(self):
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.bleu_tokenize not in BLEU_TOKENIZERS:
            raise ValueError(f"bleu_tokenize must be one of {BLEU_TOKENIZERS}, got {self.bleu_tokenize!r}")


class ReferenceSimilarityVerifier:
    """Score in [0, 1]: BLEU or ROUGE-L of the completion against the reference.

    Input columns: completion, reference.   Output: score (None = no reference, or one the metric cannot
    tokenize), verdict (correct when score >= threshold), rationale, raw (the metric's own summary).
    """

    name = "reference_similarity"
    version = "1"
    reads = ("completion", "reference")
    Config = ReferenceSimilarityConfig

    def __init__(self, config: ReferenceSimilarityConfig | None = None):
        self.config = config or ReferenceSimilarityConfig()
        self._scorer = None

    def __getstate__(self):  # ship the settings; a copy builds its scorer on first use
        return {**self.__dict__, "_scorer": None}

    def label(self, completion: str | None, reference: str | None) -> Label:
        metric = self.config.metric
        if not isinstance(reference, str) or not reference.strip():
            return Label(None, 0.0, "abstain", "no reference text for this prompt", aspect=metric)
        if not isinstance(completion, str):
            return Label(None, 0.0, "abstain", f"completion is {type(completion).__name__}, not text", aspect=metric)
        if metric == "bleu":
            score, raw = self._bleu(completion, reference)
        else:
            scorer, tokenizer = self._rouge()
            if not tokenizer.tokenize(reference):
                reason = "reference has no [a-z0-9] tokens for ROUGE-L (non-Latin script? use metric bleu)"
                return Label(None, 0.0, "abstain", reason, aspect=metric)
            result = scorer.score(target=reference, prediction=completion)["rougeL"]
            score = result.fmeasure
            raw = f"ROUGE-L P={result.precision:.4f} R={result.recall:.4f} F={result.fmeasure:.4f}"
        score = min(max(score, 0.0), 1.0)  # sacrebleu can return 100.00000000000004
        verdict = "correct" if score >= self.config.threshold else "incorrect"
        rationale = f"{metric} {score:.4f} {'>=' if verdict == 'correct' else '<'} threshold {self.config.threshold}"
        return Label(score, 1.0, verdict, rationale, raw, aspect=metric)

    def _bleu(self, completion: str, reference: str) -> tuple[float, str]:
        if self._scorer is None:
            from sacrebleu.metrics import BLEU

            # Sentence-level: exponential smoothing and effective order, as sacrebleu.sentence_bleu does.
            self._scorer = BLEU(tokenize=self.config.bleu_tokenize, smooth_method="exp", effective_order=True)
        result = self._scorer.sentence_score(completion, [reference])
        return result.score / 100.0, str(result)

    def _rouge(self):
        if self._scorer is None:
            from rouge_score import rouge_scorer, tokenizers

            tokenizer = tokenizers.DefaultTokenizer(use_stemmer=self.config.rouge_use_stemmer)
            self._scorer = (rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer), tokenizer)
        return self._scorer
