package bleu

// NLTK's corpus_bleu built directly from modified_precision and
// closest_ref_length, as NLTK structures it. The scorer computes the same
// statistics with the faster sacrebleu counter; the tests run the reference
// vectors through this form and compare the two.

// nltkStats returns [hyp_len, ref_len, num_1..N, den_1..N] for one segment:
// corpus_bleu's per-segment contributions, which it sums.
func nltkStats(refs [][]string, hyp []string, n int) []float64 {
	out := make([]float64, 2+2*n)
	out[0] = float64(len(hyp))
	out[1] = float64(nltkClosestRefLen(refs, len(hyp)))
	for i := 0; i < n; i++ {
		p := modifiedPrecision(refs, hyp, i+1)
		out[2+i], out[2+n+i] = p.num, p.den
	}
	return out
}

// nltkCorpus is corpus_bleu(list_of_references, hypotheses, weights,
// SmoothingFunction(epsilon).method<m>).
func nltkCorpus(listRefs [][][]string, hyps [][]string, weights []float64, method int, epsilon float64) (nltkResult, error) {
	n := len(weights)
	sum := make([]float64, 2+2*n)
	for i := range hyps {
		for j, v := range nltkStats(listRefs[i], hyps[i], n) {
			sum[j] += v
		}
	}
	var lastRefs [][]string
	var lastHyp []string
	if len(hyps) > 0 {
		lastRefs, lastHyp = listRefs[len(hyps)-1], hyps[len(hyps)-1]
	}
	return nltkFromStats(sum, weights, method, epsilon, lastRefs, lastHyp)
}
