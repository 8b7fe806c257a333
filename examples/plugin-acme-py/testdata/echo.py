"""A scorer that echoes what it received, for the test of `hayloft score`
through ScoreBatch: every field of the sample Go sent must arrive."""

from hayloft_plugin import Plugin, Score

plugin = Plugin("echo", "1.0")


@plugin.scorer("echo")
def echo():
    def score(sample, prediction):
        if prediction == "raise":
            raise ValueError(f"cannot score {sample.id}")
        g = sample.grid
        return Score(value=float(len(sample.targets)), invalid=prediction == "", stats=[sample.depth, -1.5], details={
            "id": sample.id, "prediction": prediction, "targets": sample.targets, "metadata": sample.metadata,
            "grid": None if g is None else [g.length, g.depth], "question": sample.question, "choices": sample.choices,
            "length": [sample.length, sample.tokenizer], "window": sample.window, "max_new_tokens": sample.max_new_tokens,
            "language": sample.language, "subtask": sample.subtask,
            "messages": [[m.role, m.content] for m in sample.messages]})

    return score
