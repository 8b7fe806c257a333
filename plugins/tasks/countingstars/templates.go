package countingstars

import (
	"strconv"
	"strings"
)

// Modes and languages.
const (
	Acquisition = "acquisition" // upstream "searching": list every count
	Reasoning   = "reasoning"   // list only the corrected counts

	English = "en"
	Chinese = "zh"
)

// Separator joins the context and the question, as upstream does.
const Separator = "\n\n\n\n"

// The upstream questions, without the leading Separator.
const (
	questionAcquisitionEN = "On this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the counted number of ★ by the little penguin. Only output the results in JSON format without any explanation."
	questionReasoningEN   = "On this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the correct number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the correctly counted number of ★ by the little penguin. Only output the results in JSON format without any explanation."
	questionAcquisitionZH = "在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅每次数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。"
	questionReasoningZH   = "在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的正确颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅正确数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。"
)

// AnswerKey is the JSON key the question asks the answer list under.
func AnswerKey(language string) string {
	if language == Chinese {
		return "小企鹅"
	}
	return "little_penguin"
}

// Question returns the upstream question for mode and language, without the
// leading Separator.
func Question(mode, language string) string {
	switch {
	case language == Chinese && mode == Reasoning:
		return questionReasoningZH
	case language == Chinese:
		return questionAcquisitionZH
	case mode == Reasoning:
		return questionReasoningEN
	default:
		return questionAcquisitionEN
	}
}

// StarSentence renders star sentence i: the correct count a and, in
// reasoning mode, the wrong count r given first.
func StarSentence(mode, language string, a, r int) string {
	as, rs := strconv.Itoa(a), strconv.Itoa(r)
	var b strings.Builder
	switch {
	case language == Chinese && mode == Reasoning:
		b.WriteString("\n小企鹅数了")
		b.WriteString(rs)
		b.WriteString("颗★，但发现数错了，于是又数了一遍，这次数对了，是")
		b.WriteString(as)
		b.WriteString("颗★\n")
	case language == Chinese:
		b.WriteString("\n小企鹅数了")
		b.WriteString(as)
		b.WriteString("颗★\n")
	case mode == Reasoning:
		b.WriteString("\nThe little penguin counted ")
		b.WriteString(rs)
		b.WriteString(" ★, but found that a mistake had been made, so the counting was done again, and this time ")
		b.WriteString(as)
		b.WriteString(" ★ was counted correctly.\n")
	default:
		b.WriteString("\nThe little penguin counted ")
		b.WriteString(as)
		b.WriteString(" ★\n")
	}
	return b.String()
}
