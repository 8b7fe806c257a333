package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hayloft/hayloft/kernel/config"
	"github.com/hayloft/hayloft/sdk"
)

// JudgeScorer is the component name of the model-graded scorer. It is the
// kernel's own: it needs a model, and only the kernel brokers model calls —
// so the judge's requests go through the same cache, journal and concurrency
// limit as any other.
const JudgeScorer = "judge"

// DefaultJudgeCriteria is the NIAH reference rubric (1/3/5/7/10).
const DefaultJudgeCriteria = `Score 1: The answer is completely unrelated to the reference.
Score 3: The answer has minor relevance but does not align with the reference.
Score 5: The answer has moderate relevance but contains inaccuracies.
Score 7: The answer aligns with the reference but has minor omissions.
Score 10: The answer is completely accurate and aligns perfectly with the reference.
Only respond with a numberical score`

type judgeOptions struct {
	// Model names the judge's model block, e.g. "model.openai.judge".
	Model     string `json:"model"`
	Criteria  string `json:"criteria"`
	MaxTokens int    `json:"max_tokens"`
}

// judge grades a prediction against the sample's reference answer by asking
// a model for a rating on the rubric. Value is the rating as given (NIAH
// reports 1–10); an answer with no rating is invalid, not zero.
type judge struct {
	model  *modelHandle
	runner *Runner // whose respond journals the judge's requests
	opts   judgeOptions
}

func (r *Runner) newJudge(ctx context.Context, sc *config.Component, models map[string]*config.Component, comps *components) (*judge, error) {
	o := judgeOptions{Criteria: DefaultJudgeCriteria, MaxTokens: 16}
	if err := sc.Options.Decode(&o); err != nil {
		return nil, sc.Diag(err)
	}
	if o.Model == "" {
		return nil, sc.Diag(sdk.Configf("model", `required: the judge's model block, e.g. "model.openai.judge"`))
	}
	comp, ok := models[o.Model]
	if !ok {
		var refs []string
		for ref := range models {
			refs = append(refs, ref)
		}
		msg := fmt.Sprintf("%q is not a model block of this config", o.Model)
		if s := config.Suggest(o.Model, refs); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return nil, sc.Diag(sdk.Configf("model", "%s", msg))
	}
	h, err := comps.model(ctx, comp)
	if err != nil {
		return nil, err
	}
	return &judge{model: h, runner: r, opts: o}, nil
}

// prompt is hayloft's own wording: the rubric, the question, the reference
// and the answer, and a fixed place for the rating so it parses reliably.
func (j *judge) prompt(s *sdk.Sample, prediction string) []sdk.Message {
	var b strings.Builder
	b.WriteString("You grade an answer against a reference answer.\n\nRubric:\n")
	b.WriteString(j.opts.Criteria)
	b.WriteString("\n\n[Question]\n")
	b.WriteString(s.Question)
	b.WriteString("\n\n[Reference answer]\n")
	b.WriteString(strings.Join(s.Targets, "\n"))
	b.WriteString("\n\n[Answer to grade]\n")
	b.WriteString(prediction)
	b.WriteString("\n\nReply with the score alone, in the form: Rating: [[N]]")
	return []sdk.Message{{Role: "user", Content: b.String()}}
}

var ratingRE = []*regexp.Regexp{
	regexp.MustCompile(`\[\[\s*(\d+(?:\.\d+)?)\s*\]\]`),
	regexp.MustCompile(`(?i)rating\s*:?\s*(\d+(?:\.\d+)?)`),
	regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)\s*$`),
}

// parseRating finds the rating in a judge's reply.
func parseRating(text string) (float64, bool) {
	for _, re := range ratingRE {
		if m := re.FindStringSubmatch(text); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func (j *judge) Score(ctx context.Context, req *sdk.ScoreRequest) (*sdk.ScoreResponse, error) {
	if len(req.Sample.Targets) == 0 {
		return nil, &sdk.RequestError{Code: sdk.CodeBadRequest, Msg: fmt.Sprintf("judge: sample %q has no reference answer", req.Sample.ID)}
	}
	greq := &sdk.GenerateRequest{
		Messages: j.prompt(req.Sample, req.Prediction),
		Params:   j.model.settings.Params,
		Sample:   &sdk.Sample{ID: req.Sample.ID, Question: req.Sample.Question},
	}
	if greq.Params.MaxTokens == 0 {
		greq.Params.MaxTokens = j.opts.MaxTokens
	}
	ans, err := j.runner.respond(ctx, j.model, greq, nil)
	var ge *generateError
	switch {
	case errors.As(err, &ge):
		return nil, fmt.Errorf("judge: %w", ge.err)
	case err != nil:
		return nil, err
	}
	text, key := ans.text, ans.key
	rating, ok := parseRating(text)
	if !ok {
		return &sdk.ScoreResponse{Invalid: true, Details: map[string]any{"judge_reply": text, "reason": "no rating in the reply"}}, nil
	}
	return &sdk.ScoreResponse{Value: rating, Details: map[string]any{"judge_reply": text, "request_key": key}}, nil
}
